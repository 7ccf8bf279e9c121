"""zbso.optimizer: optimizers (Zeus's zeus.optimizer): batch_size (the batch size
optimizer's client) and power_limit (the GPU power-limit optimizer, SPEC §6.1)."""
