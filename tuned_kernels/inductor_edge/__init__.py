"""The Inductor edge: the only code that imports `torch._inductor`. Inductor's max-autotune GEMM choices
are looked up and remembered through its own hooks: `config.inductor_choices_class` (the documented place
to override template choices, which `LookupTableChoices` also uses) and the algorithm selector's feedback
savers (called with every autotuning's timings). Keys and configs (keys.py), the hooks (choices.py). A new
torch version changes this folder."""

# imported by a process once Inductor compiles or loads a graph
COMPILER_MODULE = "torch._inductor.compile_fx"
