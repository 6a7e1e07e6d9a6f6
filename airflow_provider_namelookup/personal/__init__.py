"""People's values in the provider's tables: pseudonyms, erasure and retention."""
