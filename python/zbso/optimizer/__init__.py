"""zbso.optimizer: optimizers (Zeus's zeus.optimizer); only batch_size is provided."""
