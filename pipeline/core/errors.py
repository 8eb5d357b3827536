"""Expected failures: each carries a one-line message for the user."""


class PipelineError(Exception):
    """Base of the errors a stage reports as one line and exit code 1."""


class ConfigError(PipelineError, ValueError):
    """An invalid config value; the message names the key and what is allowed."""


class DivergenceError(PipelineError, RuntimeError):
    """Training produced a NaN or infinite loss."""


class TrackingError(PipelineError, RuntimeError):
    """The tracking store cannot be written; the message names the URI."""


class OrphanedError(PipelineError, RuntimeError):
    """The process that started a stage (DVC) is gone: the stage publishes nothing."""


class DiskFullError(PipelineError, OSError):
    """An output did not fit on its disk; the message names the disk and the size."""


class OutputError(PipelineError, OSError):
    """An output cannot be written there (a read-only folder, a folder in its place);
    the message names the file, and nothing earlier is lost."""
