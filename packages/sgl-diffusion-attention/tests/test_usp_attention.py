"""usp_attention across real processes: 4 CPU ranks over gloo (spawned once for the module), every
mesh of 2 and 4 ranks (Ulysses 2 / 4, ring 2 / 4, 2 x 2), against the single-process ``attention``
on the whole sequence (its ``torch`` definition).

Each rank builds the same full tensors from one seed, keeps its shard (``usp_shard``) and compares
its output with its rows of the single-process result within the declared ``close`` tolerance.
With Ulysses only it is also ``torch.equal`` to the single-process attention called for each
Ulysses rank's heads: the same local calls, moved around (the definition's CPU matmul path
depends on the head count, so the all-heads call may differ in the last bit). Shapes are tiny and
chosen for what they exercise: heads that do not divide by U (6 on 4: 2, 2, 1, 1; 5 on 4; 3 on 2),
sequence lengths that do not divide (10 on 4, 11 on 4, 9 on 4), B = 1 (received in place, also
after front text) and B = 2 (through a staging buffer), joint text in front and at the rear,
kv_lens that empties whole ring blocks for one sample, ``torch.compile(fullgraph=True)`` with the
groups. Bad inputs must raise on every rank (a hang would hit gloo's 30 s collective timeout, then
the spawn's timeout, and fail). The module's one spawn takes about 15-25 s on two loaded cores.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as A
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, testing

OP = "attention.usp_attention"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "torch")
PAIR = "pair"  # meshes of ranks 0 and 1 only

# name -> (mesh, B, S, H, Dh, dtype, joint (T, strategy) or None, kv_lens or None, exact)
CASES = {
    "ulysses2": ("u2", 1, 8, 4, 8, torch.float32, None, None, True),
    "ulysses4_uneven_heads_and_sequence": ("u4", 2, 10, 6, 8, torch.bfloat16, None, None, True),
    "ulysses2_joint_front_kv_lens": ("u2", 2, 7, 3, 8, torch.float32, (3, "front"), [9, 5], True),
    "ulysses4_joint_rear_kv_lens": ("u4", 1, 9, 5, 8, torch.bfloat16, (2, "rear"), [10], True),
    "ring2": ("r2", 2, 8, 2, 8, torch.float32, None, None, False),
    "ring4_uneven_sequence": ("r4", 1, 11, 3, 8, torch.bfloat16, None, None, False),
    "ring4_joint_front_kv_lens_empty_blocks": ("r4", 2, 10, 2, 8, torch.float32, (3, "front"), [13, 4], False),
    "ring4_joint_rear_kv_lens": ("r4", 1, 9, 3, 8, torch.bfloat16, (2, "rear"), [10], False),
    "mesh2x2": ("m22", 2, 9, 3, 16, torch.bfloat16, None, None, False),
    "mesh2x2_joint_rear_kv_lens": ("m22", 1, 12, 5, 8, torch.float32, (4, "rear"), [14], False),
    "mesh2x2_joint_front": ("m22", 1, 6, 4, 8, torch.float32, (2, "front"), None, False),
}
# bad inputs on the 2 x 2 mesh: name -> what every rank's error says (rank 1 of the local refusal
# raises its own reasons)
BAD = {
    "degrees_not_matching_the_world": "ulysses * ring = 3",
    "shards_of_different_lengths": "shards of different lengths",
    "dtype_differs_across_ranks": "dtype differs",
    "one_rank_refused_locally": "cannot serve",
    "kv_lens_differs_across_ranks": "kv_lens (min) differs",
    "kv_lens_out_of_range": "kv_lens values must lie",
    "joint_strategy_differs_across_ranks": "joint_strategy differs",
    "fewer_heads_than_the_ulysses_degree": "each Ulysses rank needs a head",
}
OWN_REASON = {("one_rank_refused_locally", 1): "must have q's shape"}


def _meshes(rank: int) -> dict:
    import torch.distributed as dist

    pair = dist.new_group([0, 1])
    return {"u2": A.init_usp(ulysses=2, group=pair), "r2": A.init_usp(ring=2, group=pair),
            "u4": A.init_usp(ulysses=4), "r4": A.init_usp(ring=4), "m22": A.init_usp(ulysses=2, ring=2)}


def _full(B, S, H, Dh, dtype, joint, seed):
    g = torch.Generator().manual_seed(seed)
    qkv = [torch.randn(B, S, H, Dh, generator=g).to(dtype) for _ in range(3)]
    jt = [torch.randn(B, joint[0], H, Dh, generator=g).to(dtype) for _ in range(3)] if joint else [None] * 3
    return qkv, jt


def _joint(qkv, jt, joint, heads=slice(None)):
    """q, k, v of the joint sequence (``heads``: those heads only, contiguous as a rank holds them)."""
    if joint is None:
        return [t[:, :, heads].contiguous() for t in qkv]
    front = joint[1] == "front"
    return [torch.cat([j, t] if front else [t, j], dim=1)[:, :, heads].contiguous() for t, j in zip(qkv, jt)]


def _split(o, S, joint):
    """``(sequence rows, text rows)`` of a joint output."""
    if joint is None:
        return o, None
    T = joint[0]
    return (o[:, T:], o[:, :T]) if joint[1] == "front" else (o[:, :S], o[:, S:])


def _expected(qkv, jt, joint, kv_lens, U=1):
    """The single-process attention; ``U`` > 1: computed per Ulysses rank's heads (the local calls'
    shapes, hence the same matmul path of the torch definition on the CPU) and put side by side."""
    H, S = qkv[0].shape[2], qkv[0].shape[1]
    parts = [A.attention(*_joint(qkv, jt, joint, hs), kv_lens=kv_lens, backend="torch")
             for hs in torch.tensor_split(torch.arange(H), U)]
    return _split(torch.cat(parts, dim=2), S, joint)


def _run_case(mesh, B, S, H, Dh, dtype, joint, kv, exact, seed) -> None:
    qkv, jt = _full(B, S, H, Dh, dtype, joint, seed)
    kv_lens = None if kv is None else torch.tensor(kv, dtype=torch.int32)
    kw = {"joint_q": jt[0], "joint_k": jt[1], "joint_v": jt[2], "joint_strategy": joint[1]} if joint else {}
    shards = [A.usp_shard(t, mesh) for t in qkv]
    got = A.usp_attention(*shards, **mesh.groups(), kv_lens=kv_lens, **kw)
    out, jout = got if joint else (got, None)
    want, want_j = _expected(qkv, jt, joint, kv_lens)

    def close(a, b):
        testing.assert_close(a, b, atol=CLOSE.tolerance(dtype)[0], rtol=CLOSE.tolerance(dtype)[1])

    close(out, A.usp_shard(want, mesh))
    if joint:
        close(jout, want_j)
        every = A.usp_gather(jout[None], mesh, dim=0)  # the text output of every rank, bit for bit the same
        for other in every[1:]:
            testing.assert_exact(other, every[0])
    if exact:  # Ulysses only: data movement around the same local calls
        want_u, want_uj = _expected(qkv, jt, joint, kv_lens, mesh.ulysses)
        testing.assert_exact(out, A.usp_shard(want_u, mesh))
        if joint:
            testing.assert_exact(jout, want_uj)
    ref = A.usp_attention_reference(*shards, **mesh.groups(), kv_lens=kv_lens, **kw)
    testing.assert_exact(ref[0] if joint else ref, A.usp_shard(want, mesh))


def _bad_call(name: str, rank: int, mesh) -> None:
    """One bad input on the 2 x 2 mesh: must raise."""
    if name == "degrees_not_matching_the_world":
        A.init_usp(ulysses=3, ring=1)
        return
    B, H, Dh = 1, 1 if name == "fewer_heads_than_the_ulysses_degree" else 2, 8
    lens = {"shards_of_different_lengths": [4, 2, 3, 3]}.get(name, [3, 3, 3, 3])
    dtype = torch.float16 if name == "dtype_differs_across_ranks" and rank == 3 else torch.float32
    q = torch.randn(B, lens[mesh.shard], H, Dh).to(dtype)
    k = q[..., :4] if name == "one_rank_refused_locally" and rank == 1 else q
    kv = {"kv_lens_differs_across_ranks": 5 + (rank == 2), "kv_lens_out_of_range": 13}.get(name)
    kv_lens = None if kv is None else torch.tensor([kv])
    kw = {}
    if name == "joint_strategy_differs_across_ranks":
        j = torch.randn(B, 2, H, Dh)
        kw = {"joint_q": j, "joint_k": j, "joint_v": j, "joint_strategy": "front" if rank == 0 else "rear"}
    A.usp_attention(q, k, q, **mesh.groups(), kv_lens=kv_lens, **kw)


def _compiled(mesh) -> str:
    qkv, jt = _full(1, 10, 3, 8, torch.float32, (2, "front"), seed=5)
    shards = [A.usp_shard(t, mesh) for t in qkv]

    def f(q, k, v, a, b, c):
        o, t = A.usp_attention(q, k, v, **mesh.groups(), joint_q=a, joint_k=b, joint_v=c, joint_strategy="front")
        return o * 2, t

    want = f(*shards, *jt)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(*shards, *jt)
    testing.assert_exact(got[0], want[0])
    testing.assert_exact(got[1], want[1])
    return "ok"


def _worker(rank: int, world: int) -> dict[str, str]:
    meshes = _meshes(rank)
    out: dict[str, str] = {}
    for i, (name, (key, *dims)) in enumerate(CASES.items()):
        mesh = meshes[key]
        if mesh is None:  # this rank is not in the pair
            continue
        try:
            _run_case(mesh, *dims, seed=i)
            out[name] = "ok"
        except Exception as e:
            out[name] = f"{type(e).__name__}: {e}"
    for name in BAD:
        try:
            _bad_call(name, rank, meshes["m22"])
            out[name] = "returned"
        except (UnsupportedInputError, ValueError) as e:
            out[name] = f"raised: {e}"
    try:  # torch.compile(fullgraph=True) traces the custom op with the groups by name
        out["compiled"] = _compiled(meshes["m22"])
    except Exception as e:
        out["compiled"] = f"{type(e).__name__}: {e}"
    try:  # the groups are still in step after every refused call
        _run_case(meshes["m22"], *CASES["mesh2x2"][1:], seed=99)
        out["after_errors"] = "ok"
    except Exception as e:
        out["after_errors"] = f"{type(e).__name__}: {e}"
    return out


@pytest.fixture(scope="module")
def results():
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is not available in this build")
    return testing.run_ranks(_worker, 4, timeout=150)


@pytest.mark.multiproc
@pytest.mark.parametrize("name", list(CASES))
def test_usp_attention_matches_single_process(results, name):
    ranks = (0, 1) if CASES[name][0] in ("u2", "r2") else (0, 1, 2, 3)
    for r in ranks:
        assert results[r].get(name) == "ok", f"rank {r}: {results[r].get(name)}"


@pytest.mark.multiproc
@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_raises_on_every_rank(results, name):
    for r in range(4):
        got = results[r][name]
        assert got.startswith("raised:") and OWN_REASON.get((name, r), BAD[name]) in got, f"rank {r}: {got}"


@pytest.mark.multiproc
def test_compiled_with_groups(results):
    assert all(results[r]["compiled"] == "ok" for r in range(4)), [results[r]["compiled"] for r in range(4)]


@pytest.mark.multiproc
def test_groups_in_step_after_errors(results):
    assert all(results[r]["after_errors"] == "ok" for r in range(4)), [results[r]["after_errors"] for r in range(4)]


def test_one_process_is_attention():
    """No group: the local attention over the joint sequence (torch.equal), the joint output apart."""
    qkv, jt = _full(2, 5, 3, 8, torch.float32, (2, "rear"), seed=7)
    kv_lens = torch.tensor([6, 7])
    out, jout = A.usp_attention(*qkv, joint_q=jt[0], joint_k=jt[1], joint_v=jt[2], joint_strategy="rear",
                                kv_lens=kv_lens)
    want, want_j = _expected(qkv, jt, (2, "rear"), kv_lens)
    testing.assert_exact(out, want)
    testing.assert_exact(jout, want_j)


def test_compiled_one_process():
    """torch.compile(fullgraph=True): the registered custom op, no graph break; the same values as eager."""
    qkv, jt = _full(1, 6, 2, 8, torch.float32, (3, "front"), seed=3)

    def f(q, k, v, a, b, c):
        o, t = A.usp_attention(q, k, v, joint_q=a, joint_k=b, joint_v=c, joint_strategy="front")
        return o * 2, t

    got, want = torch.compile(f, fullgraph=True, backend="aot_eager")(*qkv, *jt), f(*qkv, *jt)
    testing.assert_exact(got[0], want[0])
    testing.assert_exact(got[1], want[1])


@pytest.mark.parametrize("kwargs, message", [
    ({"joint_strategy": "middle"}, "joint_strategy must be one of"),
    ({"joint_strategy": "front"}, "needs joint_q, joint_k and joint_v"),
    ({"joint_q": torch.zeros(1, 2, 2, 8)}, "come together"),
    ({"kv_lens": torch.tensor([1.0])}, "kv_lens has dtype"),
])
def test_local_refusals(kwargs, message):
    q = torch.zeros(1, 4, 2, 8)
    with pytest.raises(UnsupportedInputError, match=message):
        A.usp_attention(q, q, q, **kwargs)
    assert not A.can_use_usp_attention(q, q, q, **kwargs)


def test_init_usp_without_distributed():
    assert A.init_usp().size == 1
    with pytest.raises(ValueError, match="not initialized"):
        A.init_usp(ulysses=2)
