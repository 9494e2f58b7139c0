"""Loading a corpus: `builtin`, `helion` (the built-in Helion kernels; needs Helion), `package.module:NAME` or
`path/to/file.py[:NAME]` (NAME defaults to CORPUS), and choosing families from it by name."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

from tuned_kernels.aot.corpus import Corpus, KernelFamily

from tuned_kernels.errors import CorpusError


def load_corpus(spec: str) -> Corpus:
    """`builtin`, `helion`, `package.module:NAME` or `path/to/file.py[:NAME]`."""
    if spec == "builtin":
        from tuned_kernels.aot.kernels.builtin import CORPUS

        return CORPUS
    if spec == "helion":
        spec = "tuned_kernels.aot.kernels.helion:CORPUS"
    target, _, attr = spec.partition(":")
    attr = attr or "CORPUS"
    try:
        if target.endswith(".py"):
            path = Path(target)
            if not path.is_file():
                raise CorpusError(f"corpus file {target} does not exist")
            module_name = path.stem  # as `import stem` names it, so kernel names match the user's program
            held = sys.modules.get(module_name)
            if held is not None and getattr(held, "__file__", None) != str(path.resolve()):
                raise CorpusError(
                    f"corpus file {target} would replace the imported module {module_name}: rename it"
                )
            folder = str(path.resolve().parent)
            if folder not in sys.path:  # its sibling modules import, as when `python` runs the file
                sys.path.insert(0, folder)
            module_spec = importlib.util.spec_from_file_location(module_name, path)
            assert module_spec and module_spec.loader
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module  # kernels' __module__ must resolve for Triton
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except CorpusError:
        raise
    except SystemExit as exc:  # sys.exit() at import: a script's main run by mistake, say
        raise CorpusError(f"cannot load corpus {spec!r}: importing it exited (status {exc.code})") from None
    except Exception as exc:
        raise CorpusError(f"cannot load corpus {spec!r}: {type(exc).__name__}: {exc}") from exc
    corpus = getattr(module, attr, None)
    if corpus is None:
        raise CorpusError(f"corpus {spec!r}: {target} has no attribute {attr!r}")
    if not all(isinstance(f, KernelFamily) for f in corpus):
        raise CorpusError(f"corpus {spec!r}: {attr} must be a sequence of KernelFamily")
    return tuple(corpus)


def select_families(corpus: Corpus, names: Sequence[str] | None) -> Corpus:
    if not names:
        return corpus
    known = {f.name for f in corpus}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CorpusError(
            f"unknown kernel families {', '.join(unknown)}; the corpus has {', '.join(sorted(known))}"
        )
    return tuple(f for f in corpus if f.name in names)
