"""People in the game: seats for humans beside LLM and rule agents (``llm-mesa lab``).

A seat is one more asynchronous policy (``SeatPolicy``): a person answers, in a browser
page of their own, exactly what the game's LLM policy would ask a model for that agent,
in parallel with the LLM and rule agents of the round. The pieces, none of which knows a
game or draws a page:

* ``asking``: the seam to a game (its LLM policy's ``question``, ``failed`` and, optionally,
  ``facts``) and the ``human`` endpoint the answers are recorded under;
* ``form``: the answer form built from the answer's JSON schema;
* ``facts``: what a person reads, from the agent's observation alone;
* ``seat``: a seat (token, holder, open question) and its policy;
* ``session``: one lab (its seats, host, tokens, the game played to its end);
* ``run_folder``: the finished game as a run folder, its people marked.

The pages and the server are the explorer's (``llm_mesa.visualization.lab_app``,
``lab_cli``); this package imports neither.
"""

from llm_mesa.lab.asking import HUMAN, NO_ANSWER, Asked, SeatingError, asked_of, human_endpoint
from llm_mesa.lab.facts import Facts, observation_facts
from llm_mesa.lab.form import Alternative, Field, Form, FormError, form_of
from llm_mesa.lab.seat import Seat, SeatAnswer, SeatError, SeatPolicy
from llm_mesa.lab.session import LabError, LabSession

__all__ = ["Alternative", "Asked", "Facts", "Field", "Form", "FormError", "HUMAN", "LabError", "LabSession",
           "NO_ANSWER", "Seat", "SeatAnswer", "SeatError", "SeatPolicy", "SeatingError", "asked_of", "form_of",
           "human_endpoint", "observation_facts"]
