"""Studio pages, one module per area; urls.py imports them."""
