"""What the registry answers from: the selected bundles (entries decoded on demand), the stale ones (seeds),
the overlay and what this process tuned, and the configs refused here. Implements `decision.Sources`; a
bundle that turns out corrupt is dropped with one problem reported, the others keep answering."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from tuned_kernels import model
from tuned_kernels.decision import Found
from tuned_kernels.errors import BadEntryError, TunedKernelsError, one_line

if TYPE_CHECKING:
    from tuned_kernels.results.view import ResultsView

Table = dict[tuple[str, str], dict[model.TuningKey, model.Entry]]


class LoadedSources:
    def __init__(
        self,
        bundles: Iterable[ResultsView] = (),
        stale: Iterable[ResultsView] = (),
        local_name: str = "overlay",
        on_problem: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.bundles = list(bundles)  # best first
        self.stale = list(stale)
        self.local: Table = {}  # the overlay's entries and those tuned in this process
        self.local_name = local_name
        self.refused: dict[model.EntrySlot, model.Config] = {}  # served configs that failed to launch
        self.said_left_out: set[str] = set()
        self.on_problem = on_problem

    def add_local(self, entries: Iterable[model.Entry]) -> None:
        """Entries answered after the bundles' (the overlay's, and those tuned in this process)."""
        for entry in entries:
            self.local.setdefault((entry.kernel.name, entry.kernel.source_hash), {})[entry.key] = entry

    def refuse(self, slot: model.EntrySlot, config: model.Config) -> None:
        self.refused[slot] = config
        self.local.get(slot[:2], {}).pop(slot[2], None)

    def local_counts(self) -> dict[str, int]:
        """Entries of the overlay (and tuned in this process), per kernel name."""
        counts: dict[str, int] = {}
        for (name, _), keys in sorted(self.local.items()):
            counts[name] = counts.get(name, 0) + len(keys)
        return counts

    def __len__(self) -> int:
        return sum(len(v) for v in self.bundles) + sum(len(v) for v in self.local.values())

    def lookup(self, slot: model.EntrySlot) -> Iterator[Found]:
        """The entries stored for `slot`: each bundle's in order, then the overlay's (read as asked for, so
        a first one that serves reads no further)."""
        if slot in self.refused:
            return
        for view in list(self.bundles):
            try:
                entry = view.lookup(slot)
            except BadEntryError:  # this entry only: a miss here, the bundle's other entries still serve
                say_left_out(view, self.said_left_out, self.on_problem)
                continue
            except TunedKernelsError as exc:  # a corrupt index: this bundle answers no more
                self._drop(view, exc)
                continue
            if entry is not None:
                yield entry, view.path
        entry = self.local.get(slot[:2], {}).get(slot[2])
        if entry is not None:
            yield entry, self.local_name

    def keys_of(self, identity: model.KernelIdentity) -> dict[model.TuningKey, Found]:
        """Every key known for this kernel (same source), bundles winning over the overlay."""
        keys: dict[model.TuningKey, Found] = {}
        for each in reversed(identity.all()):
            local = self.local.get((each.name, each.source_hash), {})
            keys.update({k: (e, self.local_name) for k, e in local.items()})
        for view in reversed(self.bundles):
            for e in self._named(view, identity):
                keys[e.key] = (e, view.path)
        return keys

    def moved(self, identity: model.KernelIdentity) -> model.KernelIdentity | None:
        """The identity a selected bundle holds this kernel under when its module was renamed since (a
        script run under another file name): the same function name and source digest, another module;
        None when a bundle holds the kernel under its own name, or no bundle holds it."""
        function = identity.name.rsplit(".", 1)[-1]
        found = None
        for view in list(self.bundles):
            for kernel in view.kernels():
                if kernel.name == identity.name:
                    return None
                same = kernel.source_hash == identity.source_hash and kernel.scheme == identity.scheme
                if found is None and same and kernel.name.rsplit(".", 1)[-1] == function:
                    found = kernel
        return found

    def stale_entries(self, identity: model.KernelIdentity) -> list[model.Entry]:
        """Stale bundles' entries for kernels of this name (any source: the kernel may have changed too)."""
        names = dict.fromkeys(each.name for each in identity.all())
        return [e for view in reversed(self.stale) for name in names for e in self._entries_named(view, name)]

    def bundle_entries(self, identity: model.KernelIdentity) -> list[model.Entry]:
        """Every entry the selected bundles hold for this kernel (this source), best bundle first."""
        return [e for view in list(self.bundles) for e in self._named(view, identity)]

    def source_hashes(self, names: Sequence[str]) -> dict[str, frozenset[str]]:
        """Per selected bundle (and the overlay), the source hashes it holds under these kernel names."""
        held: dict[str, frozenset[str]] = {}
        for view in list(self.bundles):
            try:
                held[view.path] = frozenset(h for name in names for h in view.source_hashes(name))
            except TunedKernelsError as exc:
                self._drop(view, exc)
        held[self.local_name] = frozenset(
            h for (name, h), keys in self.local.items() if name in names and keys
        )
        return held

    def made_elsewhere(self, identity: model.KernelIdentity) -> list[ResultsView]:
        """Selected bundles that hold entries for a kernel of this name, but of another source only."""
        return [
            view
            for view in list(self.bundles)
            if (named := self._entries_named(view, identity.name))
            and all(e.kernel.source_hash != identity.source_hash for e in named)
        ]

    def known_bad(self, identity: model.KernelIdentity) -> frozenset[model.Config]:
        """Configs of this kernel that a bundle recorded as rejected (wrong numbers, failed compiles) or
        that failed to launch here."""
        kernels = {(each.name, each.source_hash) for each in identity.all()}
        bad = {config for slot, config in self.refused.items() if slot[:2] in kernels}
        for view in (*self.bundles, *self.stale):
            for e in self._named(view, identity):
                bad.update(r.config for r in e.rejected)
        return frozenset(bad)

    def _named(self, view: ResultsView, identity: model.KernelIdentity) -> list[model.Entry]:
        """The view's entries for this kernel, under its identity or its previous one."""
        return [
            e
            for each in identity.all()
            for e in self._entries_named(view, each.name)
            if e.kernel.source_hash == each.source_hash
        ]

    def _entries_named(self, view: ResultsView, name: str) -> list[model.Entry]:
        try:
            named = view.entries_named(name)
        except TunedKernelsError as exc:
            self._drop(view, exc)
            return []
        say_left_out(view, self.said_left_out, self.on_problem)
        return named

    def drop(self, view: ResultsView, exc: TunedKernelsError) -> None:
        """This bundle answers no more: its index, or the file as a whole, is bad (said once)."""
        self._drop(view, exc)

    def _drop(self, view: ResultsView, exc: TunedKernelsError) -> None:
        self.bundles = [b for b in self.bundles if b is not view]
        self.stale = [b for b in self.stale if b is not view]
        self.on_problem(f"dropping bundle: {exc}")


def say_left_out(view: ResultsView, said: set[str], on_problem: Callable[[str], None]) -> None:
    """Once per bundle: the entries it holds that cannot be decoded (each a miss where asked for)."""
    if view.left_out and view.path not in said:
        said.add(view.path)
        why = view.left_out[min(view.left_out)]
        on_problem(f"{one_line(view.path)}: leaving out an entry ({why}); its key is not served from it")
