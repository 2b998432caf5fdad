T_memfind =
