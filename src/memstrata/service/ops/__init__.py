"""The operations of the capability table, one module per domain."""
