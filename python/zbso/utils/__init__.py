"""zbso.utils: helpers of Zeus's zeus.utils that training scripts use: learning-rate
scaling rules (lr_scaler) and framework synchronization (framework)."""
