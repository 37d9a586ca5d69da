"""fluid 1.8's LoD beam search: ``beam_search`` (one step: the best ``beam_size`` candidates of each
source sentence), ``beam_search_decode`` (the sentences, traced back through the steps' arrays) and
``gather_tree`` (the ids of each beam traced back through the parents, for padded [time, batch, beam] ids).

# NOTE: [Beam LoD]
# A step's ids and scores carry two LoD levels: level 0 groups the prefixes (rows of the previous
# step) by source sentence, level 1 groups the candidates (rows) by the prefix they extend. So a
# step's level 0, taken as absolute offsets, counts rows of the previous step, and a candidate's
# parent prefix is the level-1 sequence it lies in. A source whose every candidate ends a finished
# branch with the end id is pruned: its prefixes get no candidates, and the loop of a decoder built
# on this op stops when no source has any (``is_empty`` of the ids).
"""

from __future__ import annotations

import numpy as np

from fluidcompat_ops.registry import OpDef, _op, register
from fluidcompat_ops.sequence import lod_of, offsets_of, with_lod
from fluidcompat_ops.shapes import first, same_as

torch = None  # NOTE: [Lazy torch] in registry.py
F = None


def absolute_lod(lod) -> list:
    """Each level's offsets counted in rows (fluid's ToAbsOffset): a level above the last counts
    sequences of the level below it."""
    levels = [list(lod[-1])]
    for level in reversed(lod[:-1]):
        below = levels[0]
        levels.insert(0, [below[o] for o in level])
    return levels


def _less(a, b) -> bool:
    """Candidate ``a`` ranks below ``b``: a lower score, or an equal one from an earlier row (a
    NaN score compares as fluid's float comparisons do: never less, never equal)."""
    return a[2] < b[2] or (a[2] == b[2] and a[0] < b[0])


def _keep_best(top: list, item, beam_size: int) -> list:
    """``top`` (best first, at most ``beam_size``) with ``item`` offered to it: an item ranking below
    a full list's last is refused; otherwise it goes after every kept item not ranking below it, and
    a full list drops its last."""
    if len(top) >= beam_size:
        if _less(item, top[-1]):
            return top
        top = top[: beam_size - 1]
    pos = next((k for k, kept in enumerate(top) if _less(kept, item)), len(top))
    return top[:pos] + [item] + top[pos:]


def _need_lod(t, op: str, slot: str, levels: int) -> list:
    lod = lod_of(t)
    if len(lod) < levels:
        raise ValueError(
            f"{op}: Input({slot}) must carry a LoD of {levels} levels (sources, then the prefixes each candidate "
            f"extends); received {len(lod)} level(s). Feed it with fluid.create_lod_tensor(data, lengths, place) "
            "or pass it through ops that keep its LoD"
        )
    return lod


def _beam_search(ins, a):
    pre_ids, pre_scores, scores = ins["pre_ids"][0], ins["pre_scores"][0], ins["scores"][0]
    ids = first(ins, "ids")
    level, beam_size, end_id = a["level"], a["beam_size"], a["end_id"]
    lod = _need_lod(scores, "beam_search", "scores", level + 2)
    sources = absolute_lod(lod)[level]
    rows = scores.shape[0]
    if sources[-1] != rows or pre_ids.shape[0] != rows or pre_scores.shape[0] != rows:
        raise ValueError(
            f"beam_search: pre_ids, pre_scores and scores must have one row per prefix ({sources[-1]} by the LoD of "
            f"scores); received {pre_ids.shape[0]}, {pre_scores.shape[0]} and {rows} rows"
        )
    width = int(np.prod(scores.shape[1:])) if scores.dim() > 1 else 1
    pre_id = pre_ids.reshape(-1).tolist()
    # ranked in the scores' own precision (fluid 1.8.5 ranked 32-bit floats and failed on float64)
    pre_score = pre_scores.detach().reshape(-1).cpu().numpy()
    score = scores.detach().reshape(rows, width).cpu().numpy().astype(pre_score.dtype)
    if not a["is_accumulated"]:
        with np.errstate(divide="ignore", invalid="ignore"):
            score = pre_score[:, None] + np.log(score)
    cand = ids.reshape(rows, width).tolist() if ids is not None else [list(range(width))] * rows
    pre_score, score = pre_score.tolist(), score.tolist()
    per_row = [[] for _ in range(rows)]
    for start, end in zip(sources, sources[1:]):
        top = []
        for r in range(start, end):
            if pre_id[r] == end_id:  # a finished branch offers only the end id, at its score
                top = _keep_best(top, (r, end_id, pre_score[r]), beam_size)
                continue
            for d in range(width):
                top = _keep_best(top, (r, cand[r][d], score[r][d]), beam_size)
        for item in top:
            per_row[item[0]].append(item)
        # a source whose every choice ends a finished branch is done: pruned
        if all(item[1] == end_id and pre_id[r] == end_id for r in range(start, end) for item in per_row[r]):
            for r in range(start, end):
                per_row[r] = []
    chosen = [item for row in per_row for item in row]
    dev = a["_device"]
    out_lod = [list(sources), offsets_of(len(row) for row in per_row)]
    sel_ids = torch.tensor([i[1] for i in chosen], dtype=pre_ids.dtype, device=dev).reshape(-1, 1)
    sel_scores = torch.tensor([i[2] for i in chosen], dtype=pre_scores.dtype, device=dev).reshape(-1, 1)
    parents = torch.tensor([i[0] for i in chosen], dtype=torch.int32, device=dev)
    return {
        "selected_ids": [with_lod(sel_ids, out_lod)],
        "selected_scores": [with_lod(sel_scores, out_lod)],
        "parent_idx": [parents],
    }


register(
    OpDef(
        "beam_search",
        ("pre_ids", "pre_scores", "ids", "scores"),
        ("selected_ids", "selected_scores", "parent_idx"),
        {"level": 0, "beam_size": 1, "end_id": 0, "is_accumulated": True},
        lambda ins, a: {
            "selected_ids": [((-1, 1), first(ins, "pre_ids").dtype)],
            "selected_scores": [((-1, 1), first(ins, "pre_scores").dtype)],
            "parent_idx": [((-1,), "int32")],
        },
        _beam_search,
        host_inputs=frozenset({"pre_ids", "pre_scores", "ids", "scores"}),
    )
)


def _step_values(array, slot: str):
    if not isinstance(array, list):
        raise ValueError(f"beam_search_decode: Input({slot}) must be a tensor array (fluid.layers.create_array)")
    values = [v for v in array if v is not None]
    if len(values) != len(array):
        raise ValueError(f"beam_search_decode: Input({slot}) has steps nobody wrote")
    return values


def _beam_search_decode(ins, a):
    """Each source's sentences, traced back from the last step that gave it candidates: a sentence
    keeps one end id (the later ones a finished branch repeated are dropped); a source's sentences
    come best final score first (ties in step order), ids and scores as two LoD levels."""
    steps = _step_values(ins["Ids"][0], "Ids")
    step_scores = _step_values(ins["Scores"][0], "Scores")
    if not steps:
        raise ValueError("beam_search_decode: the arrays hold no step (step num should be larger than 0)")
    if len(steps) != len(step_scores):
        raise ValueError(
            f"beam_search_decode: Ids and Scores must hold as many steps; received {len(steps)} and {len(step_scores)}"
        )
    end_id = a["end_id"]
    n_src = len(_need_lod(steps[0], "beam_search_decode", "Ids", 2)[0]) - 1
    sentences = [[] for _ in range(n_src)]  # per source: [ids, scores] per sentence, last step first
    tracked = [[] for _ in range(n_src)]  # per source: each sentence's row in the step being read
    for ids_t, scores_t in zip(reversed(steps), reversed(step_scores)):
        lod = _need_lod(ids_t, "beam_search_decode", "Ids", 2)
        if len(lod[0]) - 1 != n_src:
            raise ValueError(
                f"beam_search_decode: every step must hold {n_src} sources (as step 0); one holds {len(lod[0]) - 1}"
            )
        prefixes, cands = lod[0], lod[1]
        id_list = ids_t.reshape(-1).tolist()
        score_list = scores_t.reshape(-1).tolist()
        for s in range(n_src):
            if not tracked[s]:  # the source's last step with candidates: one sentence per candidate
                for row in range(cands[prefixes[s]], cands[prefixes[s + 1]]):
                    tracked[s].append(row)
                    sentences[s].append([[id_list[row]], [score_list[row]]])
                tracked[s] = [int(np.searchsorted(cands, r, side="right")) - 1 for r in tracked[s]]
                continue
            for k, row in enumerate(tracked[s]):
                words, word_scores = sentences[s][k]
                if id_list[row] != end_id:
                    words.append(id_list[row])
                    word_scores.append(score_list[row])
                tracked[s][k] = int(np.searchsorted(cands, row, side="right")) - 1
    flat_ids, flat_scores, per_source, per_sentence = [], [], [0], [0]
    for s in range(n_src):
        ranked = sorted(sentences[s], key=lambda sent: -sent[1][0])
        for words, word_scores in ranked:
            flat_ids.extend(reversed(words))
            flat_scores.extend(reversed(word_scores))
            per_sentence.append(per_sentence[-1] + len(words))
        per_source.append(per_source[-1] + len(ranked))
    dev = a["_device"]
    lod = [per_source, per_sentence]
    return {
        "SentenceIds": [with_lod(torch.tensor(flat_ids, dtype=steps[0].dtype, device=dev), lod)],
        "SentenceScores": [with_lod(torch.tensor(flat_scores, dtype=step_scores[0].dtype, device=dev), lod)],
    }


register(
    OpDef(
        "beam_search_decode",
        ("Ids", "Scores"),
        ("SentenceIds", "SentenceScores"),
        {"beam_size": 1, "end_id": 0},
        lambda ins, a: {
            "SentenceIds": [((-1,), "int64")],
            "SentenceScores": [((-1,), first(ins, "Scores").dtype)],
        },
        _beam_search_decode,
    )
)


# -- gather_tree -----------------------------------------------------------------------------------
def _gather_tree(ins, a):
    ids, parents = ins["Ids"][0], ins["Parents"][0]
    t_max = ids.shape[0]
    result = torch.empty_like(ids)
    beam = torch.arange(ids.shape[2], device=ids.device).expand(ids.shape[1], -1)
    batch = torch.arange(ids.shape[1], device=ids.device)[:, None].expand_as(beam)
    for t in range(t_max - 1, -1, -1):
        result[t] = ids[t, batch, beam]
        beam = parents[t, batch, beam].long()
    return {"Out": [result]}


_op("gather_tree", ("Ids", "Parents"), ("Out",), {}, same_as("Ids"), _gather_tree, grad=False)
