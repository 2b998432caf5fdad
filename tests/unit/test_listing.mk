T_listing = proxy/listing.c
