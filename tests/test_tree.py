"""The size of the rooms: every module of the package and of benchmarks/ stays small enough to read in one
sitting, each function on a screen or two, each class one job. A file generated from a schema (`*_pb2.py`)
is not written by hand and is left out."""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROOMS = ("hardware", "aot", "packager", "registry", "tuned_kernels", "benchmarks")
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_CLASS_LINES = 500, 80, 150


def sources() -> list[Path]:
    return sorted(p for room in ROOMS for p in (ROOT / room).rglob("*.py") if not p.name.endswith("_pb2.py"))


def oversized(path: Path, root: Path = ROOT) -> list[str]:
    """What in `path` is over its bound, as "file: what (lines)" (file relative to `root`)."""
    text = path.read_text()
    where = path.relative_to(root).as_posix()
    found = []
    if len(text.splitlines()) > MAX_MODULE_LINES:
        found.append(f"{where}: module ({len(text.splitlines())})")
    for node in ast.walk(ast.parse(text)):
        bound = {ast.FunctionDef: MAX_FUNCTION_LINES, ast.AsyncFunctionDef: MAX_FUNCTION_LINES}.get(
            type(node), MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else None
        )
        if bound is not None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > bound:
                found.append(f"{where}: {node.name} ({length})")
    return found


def test_modules_functions_and_classes_stay_within_their_bounds() -> None:
    assert len(sources()) > 100  # the rooms were found
    assert [line for path in sources() for line in oversized(path)] == []


def test_the_bounds_are_checked_where_they_are_crossed(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    planted = tmp_path / "planted.py"
    planted.write_text(f"def long_one() -> None:\n{body}\n\n\ndef short_one() -> None:\n{body[:40]}\n")
    assert oversized(planted, tmp_path) == [f"planted.py: long_one ({MAX_FUNCTION_LINES + 1})"]


TABLED_ELSEWHERE = (
    "-overlay-write.json",
    "-refusal.json",
    "-verify-start.json",
    "-timing-noise.json",
    "-card-ranking.json",
    "-build-key.json",
    "-launch-cost.txt",
    "-hf-frames.md",
)  # own tables


def test_benchmarks_md_table_is_reproduced_from_every_committed_result_file() -> None:
    """The table and its verdicts read every GPU result file (old layouts included): those benchmarks/run.py
    wrote, and those of miss.py and helion_first_call.py."""
    tables = generated_tables()
    for name, rows in tables.items():
        steps = [
            k
            for k in json.loads((ROOT / "benchmarks" / name).read_text())
            if k not in ("environment", "device")
        ]
        assert rows, f"{name} ({', '.join(steps)}) gave no row"
    assert len(tables) >= 10


@functools.cache
def generated_tables() -> dict[str, list[list[str]]]:
    """Each committed GPU result file's table rows as benchmarks/run.py makes them, by file name: the cells
    of each row (what, measured, goal, met: the third cell is what was measured, the fifth the verdict)."""
    files = [
        p
        for p in sorted((ROOT / "benchmarks").glob("results-*.json"))
        if not p.name.endswith(TABLED_ELSEWHERE)
    ]
    return {path.name: _table_rows(path) for path in files}


def _table_rows(path: Path) -> list[list[str]]:
    command = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--table-from", str(path)]
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout
    lines = [
        line for line in out.splitlines() if line.startswith("|") and not line.startswith(("| step", "|---"))
    ]
    return [line.split(" | ") for line in lines]  # the header row left out; lines of figures without a goal


def benchmarks_md_rows() -> list[str]:
    return [line for line in (ROOT / "BENCHMARKS.md").read_text().splitlines() if line.startswith("| ")]


def bold_figures(row: str) -> list[str]:
    return re.findall(r"\*\*(\d[^*]*)\*\*", row)


def shows(cell: str, figure: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(figure)}(?![\d])", cell) is not None


def cited_rows(tables: dict[str, list[list[str]]]) -> list[tuple[str, list[str]]]:
    """Each BENCHMARKS.md table row with the result files it cites: those it names; a row naming none, or
    saying "same", also those of the row above; a table's first rows, those its section's text names."""
    out, cited = [], list[str]()

    def named(text: str) -> list[str]:
        tails = re.findall(r"([0-9a-f]{7}-[A-Za-z0-9_.-]+\.json)(?![a-z])", text)
        unknown = [
            t for t in tails if not t.endswith(TABLED_ELSEWHERE) and not any(n.endswith(t) for n in tables)
        ]
        assert not unknown, f"BENCHMARKS.md cites files that are not committed: {unknown}"
        return [name for name in tables if any(name.endswith(t) for t in tails)]

    lines = (ROOT / "BENCHMARKS.md").read_text().splitlines()
    sections, files = [], list[str]()  # per line, the files named anywhere in its section's text
    for line in lines:
        if line.startswith("#"):
            files = []
        elif not line.startswith("| "):
            files += named(line)  # in place: every line of the section sees the whole section's files
        sections.append(files)
    previous = ""
    for line, section in zip(lines, sections, strict=True):
        if line.startswith("| "):
            if not previous.startswith("| "):  # a table's header
                cited = list(section)
            own = named(line)
            if own:
                cited = [*cited, *own] if re.search(r"\| same\b", line) else own
            out.append((line, cited))
        previous = line
    return out


def test_every_figure_benchmarks_md_shows_in_bold_is_in_the_table_of_a_file_its_row_cites() -> None:
    """A figure edited in BENCHMARKS.md by hand (0.15x made 0.10x, or 0.99x made 0.50x, a figure another
    file's table has) no longer matches the tables made from the files its row cites, and fails here; rows of
    CPU files with their own tables are left out."""
    tables = generated_tables()
    shown, missing = 0, []
    for row, cited in cited_rows(tables):
        if any(suffix.removesuffix(".json") in row for suffix in TABLED_ELSEWHERE):
            continue
        measured = [cells[2] for name in cited for cells in tables[name] if len(cells) > 2]
        for figure in bold_figures(row):
            shown += 1
            if not any(shows(m, figure) for m in measured):
                missing.append((figure, row[:80]))
    assert shown >= 40
    assert missing == []


FIGURE = r"(?<![\w.])(\d+\.(\d+))"
UNIT = r"(?<=[\d\s)])(x|ms|s|%)(?!\w)"  # a ratio, a time or a share, right after its figure


def test_every_measured_figure_of_a_benchmarks_md_row_is_in_the_tables_of_the_files_it_cites() -> None:
    """Bold or not: each figure with a decimal point in a row's baseline and result cells (a time, a ratio,
    a spread of runs) is in the table the files its row cites give, goal-less lines included; a figure
    worked out by hand, or edited, fails here. Rows of files with tables of their own are left out."""
    tables = generated_tables()
    checked, missing = 0, []
    for row, cited in cited_rows(tables):
        if any(suffix.removesuffix(".json") in row for suffix in TABLED_ELSEWHERE) or not cited:
            continue
        cells = row.split(" | ")
        made = [line[2] for name in cited for line in tables[name] if len(line) > 2]  # what each measured
        for figure in (m[1] for m in re.finditer(FIGURE, " ".join(cells[1:3]))):
            checked += 1
            if not any(shows(line, figure) for line in made):
                missing.append((figure, cells[0][:80]))
    assert checked >= 200
    assert missing == []


def figures_with_units(text: str) -> list[tuple[float, str]]:
    """Each figure with a decimal point in `text` and the unit that follows it within a few words (`0.333 vs
    0.344 ms`: both ms), or none."""
    out = []
    for m in re.finditer(FIGURE, text):
        unit = re.search(UNIT, text[m.end() - 1 : m.end() + 24])
        out.append((float(m[1]), unit[1] if unit else ""))
    return out


def test_every_measured_figure_the_readme_gives_is_one_of_benchmarks_md_as_rounded() -> None:
    """Outside its command examples, each time or ratio the README states (`0.46 s`, `0.50x`, `95 %` with a
    decimal point) is a figure of BENCHMARKS.md of the same unit, rounded to the digits shown (2.045 may be
    shown 2.05: it was rounded from the file's), whose rows are checked against the result files above: a
    README figure edited, or kept after its benchmark changed, fails here."""
    prose = re.sub(r"```.*?```", "", (ROOT / "README.md").read_text(), flags=re.S)
    benchmarks = figures_with_units((ROOT / "BENCHMARKS.md").read_text())
    said = re.findall(FIGURE + r"\s?(x|ms|s|%)(?!\w)", prose)
    unfounded = [
        figure + unit
        for figure, digits, unit in said
        if not any(
            u == unit and abs(b - float(figure)) <= 0.5 * 10 ** -len(digits) + 1e-9 for b, u in benchmarks
        )
    ]
    assert len(said) >= 50
    assert unfounded == []


def test_each_verdict_benchmarks_md_gives_is_the_one_its_result_file_gives() -> None:
    """A row's yes and no (after its first bold figure) agree with the verdicts its cited file's table gives
    the rows showing its bold figures: each of those it says; all yes, it says no "no". A verdict turned over
    by hand fails here. A row citing no file takes the file of the row above ("same")."""
    tables, checked = generated_tables(), 0
    for row, cited in cited_rows(tables):
        if any(suffix.removesuffix(".json") in row for suffix in TABLED_ELSEWHERE):
            continue  # CPU files with tables of their own
        figures = bold_figures(row)
        if not figures or not cited:
            continue
        cells = row.split(" | ")
        first = next(i for i, cell in enumerate(cells) if f"**{figures[0]}**" in cell)
        said = set(re.findall(r"\b(yes|no)\b", " ".join(cells[first + 1 :]).lower()))
        verdicts = {
            cells_of[4].strip(" |").lower()
            for name in cited
            for cells_of in tables[name]
            if len(cells_of) > 4
            if any(shows(cells_of[2], f) for f in figures)
        } - {"-"}  # a figure with no goal has no verdict to say
        checked += 1
        assert verdicts <= said, row  # every verdict the file gives its figures is said
        if verdicts == {"yes"}:
            assert said == {"yes"}, row
    assert checked >= 20


def test_every_figure_of_a_row_citing_a_results_table_file_is_in_that_files_table() -> None:
    """A row citing a result file that is its own table (`…-hf-frames.md`: the benchmark writes it) shows
    only figures that table has, rounded as it rounds them; a figure edited by hand fails here."""
    checked, missing, committed = 0, [], sorted((ROOT / "benchmarks").glob("results-*.md"))
    for row in (ROOT / "BENCHMARKS.md").read_text().splitlines():
        tails = re.findall(r"…(-[0-9a-f]{7}-[A-Za-z0-9_.-]+\.md)", row) if row.startswith("| ") else []
        files = [f for f in committed for t in tails if f.name.endswith(t)]
        assert len(files) == len(tails), f"a row cites a result file that is not committed: {row[:80]}"
        table = "\n".join(line for f in files for line in f.read_text().splitlines() if line.startswith("| "))
        for figure in (m[1] for m in re.finditer(FIGURE, row.split(" | ")[2] if files else "")):
            checked += 1
            if figure not in table:
                missing.append((figure, row[:60]))
    assert checked >= 20
    assert missing == []


def test_the_quality_and_tune_verdicts_read_a_report_of_their_own(tmp_path: Path) -> None:
    """No committed file holds the quality step, so a small report of its shape stands in for one."""
    tune_run = {"seconds": 50.0, "benchmark_seconds": 40.0, "compile_seconds": 2.0, "wall_s": 55.0}
    report = {
        "quality": {"rows": [
            {"case": "dtype=float16 M=16", "exhaustive.pb.zst": 1.0, "seeded.pb.zst": 0.99, "vs_cublas": 0.97,
             "ops_vs_cublas": 1.0, "ops_impl": "triton"},
            {"case": "dtype=bfloat16 M=16", "bf16.pb.zst": 0.995, "vs_cublas": 0.96},
        ]},
        "tune": {"exhaustive": {**tune_run, "configs_benchmarked": 100},
                 "seeded": {**tune_run, "configs_benchmarked": 25}},
    }  # fmt: skip
    path = tmp_path / "quality.json"
    path.write_text(json.dumps(report))
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--table-from", str(path)],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    # the file holds rates (best now over shipped, cuBLAS over ours); every row gives a time ratio, ours first
    assert (
        "| tune | seeded vs exhaustive: the best found, its time over the exhaustive's (geomean, re-measured now),"
        " runs | 1.010, 25% of the runs | ≤ 1.020 with ≤ 30 % | yes |" in out
    )
    assert (
        "| quality | shipped config's time over the best re-measured now (geomean) | 1.003 | ≤ 1.010 | yes |"
        in out
    )
    assert (
        "| quality | Triton matmul kernel's time over cuBLAS's, float16 (per key) | 1.03 | ≤ 1.053 | yes |"
        in out
    )
    assert "| tune | our tune wall vs pure benchmark time | 50.0 s vs 40.0 s = 1.25x" in out


def test_a_speedup_file_without_a_one_gpu_run_says_so_for_each_run_it_cannot_weigh(tmp_path: Path) -> None:
    """A call that ran only multi-GPU runs (the 1-GPU run in another call's file) prints each run's wall time
    and that the file holds nothing to weigh it against, instead of a table with no rows; a Dask run with a
    tune run of as many GPUs beside it is weighed against that."""
    split = [{"gpu": "gpu0", "measuring": 90.0, "compiling": 1.0, "startup": 7.7}]

    def table_of(*runs: tuple[str, str, int, float]) -> str:
        rows = {label: {"via": via, "gpus": gpus, "wall_s": wall, "tuned": 62, "time_split": split}
                for label, via, gpus, wall in runs}  # fmt: skip
        path = tmp_path / "speedup.json"
        path.write_text(json.dumps({"speedup": rows}))
        return subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--table-from", str(path)],
            capture_output=True, text=True, timeout=120, check=True,
        ).stdout  # fmt: skip

    alone = table_of(("4 GPUs, Dask", "dask", 4, 106.5), ("2 GPUs, Dask", "dask", 2, 187.4))
    for label, wall in (("4 GPUs, Dask", "106.5"), ("2 GPUs, Dask", "187.4")):
        assert (
            f"| speedup | {label}: wall time with start-up | {wall} s (62 keys); no 1-GPU run in this file"
            in alone
        )
    beside = table_of(("4 GPUs, Dask", "dask", 4, 106.5), ("4 GPUs, tune", "tune", 4, 100.9))
    assert "| speedup | 4 GPUs, Dask against 4 GPUs, tune, on the same host" in beside
    assert "no 1-GPU run" not in beside
