"""bargein.verify: the conversation verifier and minimal-edit modifier (IHBench 3.3-3.4, I.6-I.7).

    vc = verify_conversation(conv)                       # offline: deterministic checks + rules
    vc = await averify_conversation(conv, llm=client)    # + LLM naturalness / type-fit checks
    vc.accepted, vc.discard_reasons, vc.verdicts, vc.conversation   # the edited conversation
"""

from bargein.verify.checks import CHECKS, run_checks
from bargein.verify.edits import EditCommand, ModifyResult, apply_edits
from bargein.verify.llm_checks import LLMIssue, VerifierReport, llm_checks
from bargein.verify.loop import (
    averify_conversation, reason_check, summarize, verify_conversation, verify_stage,
)
from bargein.verify.modifier import LLMClient, ModifierOutput, amodify, modify

__all__ = [
    "CHECKS", "EditCommand", "LLMClient", "LLMIssue", "ModifierOutput", "ModifyResult",
    "VerifierReport", "amodify", "apply_edits", "averify_conversation", "llm_checks", "modify",
    "reason_check", "run_checks", "summarize", "verify_conversation", "verify_stage",
]
