"""What the CLI knows of each noun (one module a noun: its documents, paths, comparisons, table cells and apply)."""
