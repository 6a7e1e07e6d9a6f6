"""People's values in what the provider keeps: pseudonyms, erasure and retention."""
