"""Coherence rules of the offline agents, each on hand-written sentences (not drawn from the
banks): hypothetical fees, resumptions that need their antecedent, steps and prices an impatient
caller may not skip, time constraints against the call's own times, who the caller is."""

from __future__ import annotations

import random
import re

from bargein.generators import phrases as P
from bargein.generators.grounded import objects_in
from bargein.generators.intents import contradicts_times
from bargein.generators.plan_state import answer_question
from bargein.generators.planner_text import _CALLER_TASK, _unheard_price
from bargein.generators.planner_cut import resume_text
from bargein.records.plan import Recovery


def test_a_hypothetical_fee_is_no_pushback_object():
    hypo = ("If you'd missed the cutoff, we could still do an off-cycle correction, but that "
            "carries a small fee, so this timing works well.")
    assert not [o for o in objects_in(hypo, ("fee",))]
    real = "Changing the date carries a $75 change fee, and the new fare applies."
    assert [o.phrase for o in objects_in(real, ("fee",))]
    # a condition the caller has not said holds (read at 3cfc0a8, seed 31415: "Sorry, the new
    # policy is a problem for me" against an insurance change nobody had mentioned)
    cond = ("If you've changed insurers recently, let me know, because the new policy has to "
            "show up in our system before the renewal can go through.")
    assert not objects_in(cond, ("fee", "policy"))
    assert [o.phrase for o in objects_in("The new policy has to show up in our system before "
                                         "the renewal can go through.", ("fee", "policy"))]
    # the lower charge of a downgrade the caller asked for (hand-read of seed 90210: "Whoa,
    # my next charge? Nobody told me about that." and a gold offering to waive it)
    assert not objects_in("Your next charge will be at the new, lower price.", ("fee",))
    assert [o.phrase for o in objects_in("Your next charge will include a $9 activation fee.",
                                         ("fee",))]


def test_a_resumption_starts_at_the_antecedent_of_a_pointing_sentence():
    text = ("Next, the student's full name and date of birth, please. When those match, we can "
            "look at the account together.")
    heard = "Next, the student's full name and date of birth, please. When those match, we can"
    rec = Recovery(type="topic_switch", message_index=1, planned_text=text, heard_text=heard,
                   remainder="", interjection="x", content_start=0)
    assert resume_text(text, rec).startswith("Next, the student's full name")
    plain = "Your order is packed. The courier comes at noon tomorrow."
    rec2 = rec.model_copy(update={"planned_text": plain, "heard_text": "Your order is packed. The courier"})
    assert resume_text(plain, rec2) == "The courier comes at noon tomorrow."


def test_an_approval_the_caller_owes_and_a_price_in_miles_are_not_skippable():
    assert _CALLER_TASK.search("I've sent an approval request to a@b.com. Once you approve it there, "
                               "payroll processes it.")
    assert not _CALLER_TASK.search("The employee will see the change on their next pay stub.")
    assert _unheard_price("There is upgrade space. The upgrade costs 20,000 miles one way.", 0) == \
        "The upgrade costs 20,000 miles one way."


def test_time_constraints_against_the_calls_times():
    assert contradicts_times("can only do appointments after 2:30 PM", ["10:15 AM"])
    assert contradicts_times("can only do appointments after 2:30 PM", ["3:00 PM", "2:15 PM"])
    assert not contradicts_times("can only do appointments after 2:30 PM", ["3:00 PM"])
    assert contradicts_times("mornings are out with my shifts", ["9:40 AM"])
    assert not contradicts_times("is travelling with their 6-year-old", ["9:40 AM"])
    assert contradicts_times("I can only do appointments late in the afternoon", ["10:15 AM"])
    assert not contradicts_times("I can only do appointments late in the afternoon", ["4:30 PM"])


def test_a_time_constraint_the_call_then_breaks_is_never_said(tmp_path):
    """"I can only do appointments late in the afternoon" / "I'll look for late-afternoon
    times", then the call books 10:15 AM (hand-read of seed 90210): a normal-interjection pair
    that bounds the time is drawn only where the call's own times keep to it."""
    from doubles.offline_calls import scenario_batch
    from bargein.generators.plan_state import ConversationState

    pair = next(p for p in P.bank("pairs", "normal_constraint.healthcare")
                if "late in the afternoon" in p["user"])
    scns = [s for s in scenario_batch(40, 3, tmp_path)
            if s.goal.name in ("reschedule_appointment", "schedule_specialist_appointment")]
    seen = {True: 0, False: 0}
    for scn in scns:
        st = ConversationState(scenario=scn, target_messages=30)
        times = st.call_times()
        fits = st._fits_goal(pair)
        assert not (fits and contradicts_times(pair["user"], times)), (scn.id, times)
        seen[fits] += 1
    assert seen[False], "no scenario with a morning time in the batch"


def test_the_caller_is_the_person_the_record_describes():
    q = "Thank you. I have the record for Ann Lee. Are you the patient, or are you calling on their behalf?"
    for seed in range(20):
        kind, reply = answer_question(q, random.Random(seed))
        assert reply == "I'm the patient."


def test_plural_label_agreement():
    assert P.tidy("the last four digits of the card is 3048") == "The last four digits of the card are 3048"
    # two repairs of one word (its capital and its agreement), made "Ire the last four digits
    # really necessary for this?" in 1 of 24 offline calls of seed 11
    assert P.fill("is {obj} really necessary for this?", obj="the last four digits") == \
        "Are the last four digits really necessary for this?"
    assert P.tidy("Hold on, is the last four digits really necessary?") == \
        "Hold on, are the last four digits really necessary?"
    assert P.clause("a parent had major medical expenses") is not None   # never a correction value


def test_a_signature_or_a_check_only_the_caller_can_make_is_not_skippable():
    assert _CALLER_TASK.search("We need your signed authorisation; it's a one-page form you can "
                               "sign on your phone.")
    assert _CALLER_TASK.search("Can you confirm you're signed in and see the new device listed?")
    assert _CALLER_TASK.search("The block doesn't affect your photos, so also lock it remotely.")
    assert not _CALLER_TASK.search("An appraiser usually responds within three weeks.")


def test_a_new_later_deadline_is_no_pushback_object():
    assert not objects_in("Once filed, your new filing deadline is six months later.", ("policy",))
    assert objects_in("Returns must be sent back within fourteen days of delivery.", ("policy",))


def test_a_photo_id_to_bring_is_no_identity_check_and_is_cut_whole():
    text = "Please bring your insurance card, a photo ID and a list of the medications you take."
    assert not objects_in(text, ("requirement",))
    words = text.split()
    assert words.index("ID") in P.protected_cuts(text)       # never "a photo | ID"


def test_a_talking_point_that_leans_back_and_a_moot_fallback():
    from bargein.generators.planner_text import _IF_DECLINED, _LEANS_BACK
    assert _LEANS_BACK.match("If that doesn't suit, I can put you on the cancellation list.")
    assert _LEANS_BACK.match("If you'd missed the cutoff, we could still do an off-cycle correction.")
    assert not _LEANS_BACK.match("If you'd like a temporary phone, any store can help.")
    assert not _LEANS_BACK.match("Your order is packed and ready.")
    assert _IF_DECLINED.match("If that doesn't suit, I can also put you on the cancellation list.")


def test_requirement_alternatives_stay_on_this_call():
    """Accepting a callback or a branch visit would end the call; the agent then carrying on
    as if verified reads wrong. Every requirement alternative is done on this call."""
    import re
    for key in P.bank_keys("assistant"):
        if key.startswith("alternatives_requirement"):
            for alt in P.bank("assistant", key):
                assert not re.search(r"call you back|callback|branch|in person|local office", alt), alt


def test_prices_choices_and_reports_of_work_are_never_trimmed():
    from bargein.generators.planner_text import _essential
    from bargein.records.plan import Unit

    def unit(kind, text):
        return Unit(kind=kind, stage="s", text=text, keys=(), purpose="")

    assert _essential(unit("inform", "Business is 24 dollars per seat per month, plus tax."))
    assert _essential(unit("ask", "Do you want to close the membership completely, or switch to monthly billing?"))
    assert _essential(unit("inform", "I've issued a refund of the renewal to your card."))
    assert not _essential(unit("inform", "Most customers find the new menus within a day."))
    assert P.label("last_used") == "last place the card was used"   # the caller says it too
    # what the caller is sent, or asked to do, is never trimmed for length
    assert _essential(unit("inform", "I'm sending the release form to Ann Lee's email; it takes "
                                     "about two minutes to sign."))
    assert _essential(unit("inform", "The form lists what's shared. Let me know once you've "
                                     "signed and I'll check it came through."))


def test_a_dont_instruction_and_plural_digits_agreement():
    assert _CALLER_TASK.search("Please don't cancel your old service yet, or we could lose the number.")
    assert P.tidy("But the last four digits of my card still bothers me.") == \
        "But the last four digits of my card still bother me."


def test_a_slot_the_business_offers_is_its_own_value_not_the_callers():
    """"Let me see... it's R F, seven seven six six eight five. And the new time is 10:15 AM."
    before any slot was offered (hand-read of seed 90210): "Would you like me to hold {new_date}
    at {new_time}?" offers the clinic's slot; it does not ask the caller for it, so the caller
    neither volunteers nor corrects it."""
    from bargein.generators.catalogue_loader import load_catalogue
    from bargein.generators.intents import records_keys

    goal = load_catalogue().domains["healthcare"].goals["reschedule_appointment"]
    assert {"new_date", "new_time"} <= records_keys(goal)


def test_a_wait_pushed_back_on_is_explained_as_a_wait():
    """"I can't change one business day myself; it's set the same way for everyone." (hand-read
    of seed 31337): a duration is no rule to change; the gold says why it takes that long."""
    from bargein.generators.grounded import recover_pushback

    for seed in range(20):
        gold = recover_pushback(random.Random(seed), "policy", "one business day")
        assert "one business day" in gold and not re.search(r"change one business day|"
                                                             r"one business day is the standard rule",
                                                             gold), gold
