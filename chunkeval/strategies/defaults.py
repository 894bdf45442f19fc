"""Registers the default strategy matrix (SPEC section 5). Filled in by the splitter work."""
