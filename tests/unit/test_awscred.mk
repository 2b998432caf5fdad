T_awscred = policy/awscred.c
