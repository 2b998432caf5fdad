T_jscheck =
