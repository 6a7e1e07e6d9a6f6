"""SQL sources and sinks of the table operators, through common-sql ``DbApiHook``s."""
