"""zbso.callback: training-loop hooks (Zeus's zeus.callback). BatchSizeOptimizer is a
Callback, so it goes into a CallbackSet with other callbacks (a power-limit optimizer, for
instance) and a loop calls each hook once for all of them."""


class Callback:
    """Base class of callbacks: every hook does nothing unless a subclass overrides it."""

    def on_train_begin(self):
        """Called at the beginning of training."""

    def on_train_end(self):
        """Called at the end of training."""

    def on_epoch_begin(self):
        """Called at the beginning of each epoch."""

    def on_epoch_end(self):
        """Called at the end of each epoch."""

    def on_step_begin(self):
        """Called at the beginning of each step."""

    def on_step_end(self):
        """Called at the end of each step."""

    def on_evaluate(self, metric):
        """Called after evaluating the model, with the validation metric."""

    def on_instruction_begin(self, name):
        """Called at the beginning of a pipeline instruction such as forward or backward."""

    def on_instruction_end(self, name):
        """Called at the end of a pipeline instruction such as forward or backward."""


class CallbackSet(Callback):
    """Calls each hook on every callback of `callbacks`, in their order. An exception from
    one stops the hook there (the later callbacks of that hook are not called), as in
    Zeus."""

    def __init__(self, callbacks):
        self.callbacks = callbacks

    def on_train_begin(self):
        for callback in self.callbacks:
            callback.on_train_begin()

    def on_train_end(self):
        for callback in self.callbacks:
            callback.on_train_end()

    def on_epoch_begin(self):
        for callback in self.callbacks:
            callback.on_epoch_begin()

    def on_epoch_end(self):
        for callback in self.callbacks:
            callback.on_epoch_end()

    def on_step_begin(self):
        for callback in self.callbacks:
            callback.on_step_begin()

    def on_step_end(self):
        for callback in self.callbacks:
            callback.on_step_end()

    def on_evaluate(self, metric):
        for callback in self.callbacks:
            callback.on_evaluate(metric)

    def on_instruction_begin(self, name):
        for callback in self.callbacks:
            callback.on_instruction_begin(name)

    def on_instruction_end(self, name):
        for callback in self.callbacks:
            callback.on_instruction_end(name)


__all__ = ["Callback", "CallbackSet"]
