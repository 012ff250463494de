"""``popdist`` and ``popart`` under the simulator: the names Graphcore's applications use,
with popdist's single-instance answers, and one line naming anything else."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from profcompare.emulator import popart, popdist, popxl
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError


def test_popdist_without_poprun_is_one_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("POPDIST_NUM_TOTAL_REPLICAS", "POPDIST_NUM_LOCAL_REPLICAS", "POPDIST_REPLICA_INDEX_OFFSET"):
        monkeypatch.delenv(name, raising=False)
    assert popdist.isPopdistEnvSet() is False
    assert (popdist.getInstanceIndex(), popdist.getNumInstances()) == (0, 1)


def test_popdist_reads_the_launch_poprun_describes(monkeypatch: pytest.MonkeyPatch) -> None:
    # 16 replicas, 4 per instance, this instance's first replica is 8: instance 2 of 4
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "16")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "4")
    monkeypatch.setenv("POPDIST_REPLICA_INDEX_OFFSET", "8")
    assert popdist.isPopdistEnvSet() is True
    assert (popdist.getInstanceIndex(), popdist.getNumInstances()) == (2, 4)
    assert (popdist.getNumTotalReplicas(), popdist.getNumLocalReplicas(), popdist.getReplicaIndexOffset()) == (16, 4, 8)


def test_other_names_are_refused_by_name() -> None:
    with pytest.raises(SimulatorNotImplementedError, match=r"^popdist\.init is not implemented"):
        popdist.init  # noqa: B018
    with pytest.raises(SimulatorNotImplementedError, match=r"^popart\.Builder is not implemented"):
        popart.Builder  # noqa: B018
    assert not hasattr(popart, "InferenceSession")
    with pytest.raises(SimulatorNotImplementedError, match=r"popart\.DeviceInfo\(\)"):
        popart.DeviceInfo()


def test_version_names_the_emulated_release(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    assert popart.versionString().startswith("3.0.0 (profcompare-sim ")
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.4")
    assert popart.versionString().startswith("3.4.0 (profcompare-sim ")


def test_session_options_are_one_object_per_ir_with_popart_defaults() -> None:
    ir = popxl.Ir()
    opts = ir._pb_ir.getSessionOptions()
    assert opts is ir._pb_ir.getSessionOptions() and isinstance(opts, popart.SessionOptions)
    assert (opts.partialsTypeMatMuls, opts.enableStochasticRounding, opts.engineOptions, opts.numIOTiles) == ("", False, {}, 0)
    opts.numIOTiles = 64
    opts.enableStochasticRounding = True
    opts.partialsTypeMatMuls = "Half"
    opts.engineOptions["target.syncReplicasIndependently"] = "true"
    again = ir._pb_ir.getSessionOptions()
    assert ir.num_io_tiles == 64 and again.matmul_partials_half and again.enableStochasticRounding is True
    assert again.as_dict()["engineOptions"] == {"target.syncReplicasIndependently": "true"}
    with pytest.raises(ValueError, match="partialsTypeMatMuls must be 'float' or 'half'"):
        opts.partialsTypeMatMuls = "double"
    assert popxl.Ir()._pb_ir.getSessionOptions().numIOTiles == 0  # another Ir has its own


def test_programs_import_them_under_their_real_names(tmp_path) -> None:
    script = tmp_path / "uses_runtime.py"
    script.write_text(textwrap.dedent("""
        import popart, popdist, popxl
        print(popdist.isPopdistEnvSet(), popdist.getInstanceIndex(), popdist.getNumInstances(),
              isinstance(popxl.Ir()._pb_ir.getSessionOptions(), popart.SessionOptions))
        import popart._internal.ir as _ir
        print(_ir.op.MatMulOp.__name__)
        import popart._internal.ir.transforms
    """))
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("POPDIST_")}
    done = subprocess.run([sys.executable, "-m", "profcompare.sim", str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.splitlines() == ["False 0 1 True", "MatMulOp"]
    assert done.returncode == 1
    assert "module popart._internal.ir.transforms is not implemented by the profcompare simulator" in done.stderr


def test_a_cpp_custom_op_built_by_cppimport_is_refused_by_name(tmp_path) -> None:
    package = tmp_path / "myops"
    package.mkdir()
    (package / "__init__.py").write_text("import cppimport.import_hook\nfrom . import my_op_binding\n")
    (package / "my_op_binding.cpp").write_text("// cppimport\n#include <popart/op.hpp>\n")
    (tmp_path / "prog.py").write_text("import myops\n")
    # a stand-in for the installed cppimport, whose hook would compile the .cpp
    (tmp_path / "cppimport").mkdir()
    (tmp_path / "cppimport" / "__init__.py").write_text("")
    (tmp_path / "cppimport" / "import_hook.py").write_text("open('compiled', 'w').close()\n")
    done = subprocess.run([sys.executable, "-m", "profcompare.sim", str(tmp_path / "prog.py")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1
    assert not (tmp_path / "compiled").exists()
    # sources the simulator does not know (emulator/cpp_custom_ops recognises the applications' own)
    assert ("C++ custom op module my_op_binding (cppimport, " in done.stderr
            and "its sources are not among those the simulator implements" in done.stderr
            and done.stderr.rstrip().endswith("is not implemented by the profcompare simulator"))
    assert sorted(p.name for p in package.iterdir() if p.name != "__pycache__") == ["__init__.py", "my_op_binding.cpp"]
