T_units =
