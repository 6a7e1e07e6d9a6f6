"""The engine shared by all operators: plan rows, decide the budget, answer queries, report progress."""
