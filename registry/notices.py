"""What a decision tells the user, once: a kernel that changed since it was tuned, a stored config the
kernel does not offer, Inductor choices made with another torch, a Helion kernel tuned with another Helion or
torch. Each said once per kernel and file (a Helion mismatch once per file)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from tuned_kernels.registry.sources import LoadedSources

from tuned_kernels import model
from tuned_kernels.decision import Decision
from tuned_kernels.errors import one_line
from tuned_kernels.helion_edge import keys as helion_keys
from tuned_kernels.inductor_edge import keys as inductor_keys

INSTEAD = {"predicted": "serving a predicted config instead", "nearest": "serving the nearest key's instead"}


class Notices:
    def __init__(self, on_problem: Callable[[str], None]) -> None:
        self.on_problem = on_problem
        self.changed_kernels: dict[str, str] = {}  # kernel -> the file tuned for another source
        self._said: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def after(
        self,
        identity: model.KernelIdentity,
        key: model.TuningKey,
        decision: Decision,
        sources: LoadedSources,
        torch_version: str,
    ) -> None:
        inductor = identity.name.startswith(inductor_keys.PREFIX)  # its "source" is torch's version
        if decision.kind == "miss" and inductor:
            for view in sources.made_elsewhere(identity):
                self._once(
                    ("torch", view.path),
                    f"{view.path}: Inductor choices made with torch {view.header.compiler.torch_version}, "
                    f"running {torch_version}; Inductor autotunes as usual",
                )
        if decision.reason == "other key" and identity.name.startswith(helion_keys.PREFIX):
            self._made_with_another_helion(identity, key, sources)
        if decision.reason == "kernel changed" and not inductor:
            with self._lock:
                first = identity.name not in self.changed_kernels
                self.changed_kernels.setdefault(identity.name, decision.changed_in)
            if first:
                self.on_problem(
                    f"{decision.changed_in}: holds {identity.name} for another source: the kernel changed "
                    "since it was tuned; tuning it again"
                )
        instead = INSTEAD.get(decision.kind, "tuning instead")
        for entry, source in decision.unfit:
            self._once(
                (identity.name, source),
                f"{source}: config {one_line(entry.best.describe(), 80)} is not one of the configs of "
                f"{identity.name}; {instead}",
            )

    def _made_with_another_helion(
        self, identity: model.KernelIdentity, key: model.TuningKey, sources: LoadedSources
    ) -> None:
        for stored, (_, path) in sources.keys_of(identity).items():
            why = helion_keys.mismatch(stored, key)
            if why is not None:
                self._once(  # once per file and cause: every kernel of that file has it
                    (f"helion: {why}", path),
                    f"{path}: holds Helion kernels tuned with {why} ({identity.name} the first met); Helion "
                    "autotunes them",
                )
                return

    def _once(self, about: tuple[str, str], message: str) -> None:
        with self._lock:
            if about in self._said:
                return
            self._said.add(about)
        self.on_problem(message)
