"""Model providers: one small protocol (:class:`Model`) and its implementations."""

from hive.providers.base import Message, Model, ModelResponse, ModelSettings, TokenUsage, ToolCall, ToolSpec

__all__ = ["Message", "Model", "ModelResponse", "ModelSettings", "TokenUsage", "ToolCall", "ToolSpec"]
