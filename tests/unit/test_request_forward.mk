# The forwarded exchanges: the same sources and fixture as test_request.
T_request_forward = $(T_request)
