"""What a researcher runs: simulations, comparisons, sweeps, results, plots and tuning.

Public names (import them from here, not from the submodules):

* :func:`simulate` — one agent on one environment, R replications, -> :class:`SimulationResult`;
* :func:`compare` — several agents on common random numbers, -> (frame, summary, results);
* :func:`sweep` over a :class:`SweepSpec` (parallel, resumable), on the general grid runner
  :func:`run_grid` (:func:`grid_cells` x seeds, stored per cell in :class:`CellFiles` or one
  :class:`CsvTable`; finished cells are skipped on a re-run);
* :func:`save_results`, :func:`load_results`, :func:`summarize` — tidy frames on disk;
* :func:`plot_regret_curves` — cumulative-regret curves with analytic 95% bands;
  :func:`plot_reward_curves` — cumulative-reward curves of a replay of logged data;
* :class:`AgentTuningObjective` — an agent's hyper-parameters as a DP-GIBO objective.

Every name loads its module on first use, so ``import dpbandits.harness`` (and importing one
submodule, e.g. the catalogue behind ``dpbandits list``) pulls in neither the agents and the
accountant nor matplotlib or the Bayesian-optimization layer. The functions named like their
modules (``compare``, ``simulate``, ``sweep``) are bound here when first asked for, so the
package attribute is the function, never the module.
"""

from __future__ import annotations

import importlib
import sys
import types

#: public name -> the submodule defining it (imported on first access)
_LAZY = {"compare": "compare", "summary_table": "compare",
         "CellFiles": "grid", "CsvTable": "grid", "GridCell": "grid", "grid_cells": "grid",
         "run_grid": "grid",
         "SimulationResult": "results", "load_results": "results", "save_results": "results",
         "summarize": "results",
         "simulate": "simulate",
         "SweepSpec": "sweep", "sweep": "sweep",
         "plot_regret_curves": "plots", "plot_reward_curves": "plots",
         "AgentTuningObjective": "tuning"}

__all__ = ["AgentTuningObjective", "CellFiles", "CsvTable", "GridCell", "SimulationResult",
           "SweepSpec", "compare", "grid_cells", "load_results", "plot_regret_curves",
           "plot_reward_curves", "run_grid", "save_results", "simulate", "summarize",
           "summary_table", "sweep"]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'dpbandits.harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"dpbandits.harness.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


#: the functions named like their modules: the package attribute is the function
_SHADOWING = frozenset(name for name, module in _LAZY.items() if name == module)


class _Package(types.ModuleType):
    """This package, whose attributes ``compare``, ``simulate`` and ``sweep`` stay the
    functions: the import system binds each submodule on its package once it is loaded
    (``setattr``), which would otherwise make ``dpbandits.harness.simulate`` the module after
    any ``import dpbandits.harness.simulate``. Such a binding is dropped; the name resolves
    to the function (``__getattr__``), and the module stays in ``sys.modules``."""

    def __setattr__(self, name: str, value) -> None:
        if name in _SHADOWING and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
