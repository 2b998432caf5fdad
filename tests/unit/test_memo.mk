T_memo = cache/memo.c
