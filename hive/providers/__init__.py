"""Model providers: one small protocol (:class:`Model`) and its implementations.

Make a model from a spec with :func:`hive.providers.registry.infer_model`; see docs/providers.md.
"""

from hive.providers.base import (
    ErrorKind,
    Message,
    Metered,
    Model,
    ModelResponse,
    ModelSettings,
    ProviderError,
    TokenUsage,
    ToolCall,
    ToolSpec,
)

__all__ = [
    "ErrorKind",
    "Message",
    "Metered",
    "Model",
    "ModelResponse",
    "ModelSettings",
    "ProviderError",
    "TokenUsage",
    "ToolCall",
    "ToolSpec",
]
