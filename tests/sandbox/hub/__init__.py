"""A small Hugging Face Hub endpoint for the sandbox (TEST CODE, not part of the collection)."""
