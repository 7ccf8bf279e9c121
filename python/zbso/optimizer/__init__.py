"""zbso.optimizer: optimizers (Zeus's zeus.optimizer). batch_size is provided; a power
limit optimizer would sit next to it as zbso.optimizer.power_limit."""
