"""Where a region set's single-hop questions come from: the case bank or any loaded benchmark."""
