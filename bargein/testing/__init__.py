"""Test helpers that ship with bargein: a loopback server speaking the OpenAI and Anthropic wire
protocols, so tests and benchmarks drive the real SDKs without a network.

    from bargein.testing.loopback import LoopbackLLMServer
"""

from bargein.testing.loopback import FAULT_KINDS, Fault, LoopbackLLMServer, ReceivedRequest
from bargein.testing.loopback_process import LoopbackProcess
from bargein.testing.wire import example_from_schema, last_user_text, request_schema, tone_speech

__all__ = [
    "FAULT_KINDS", "Fault", "LoopbackLLMServer", "LoopbackProcess", "ReceivedRequest", "example_from_schema",
    "last_user_text", "request_schema", "tone_speech",
]
