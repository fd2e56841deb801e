"""The compiled core runs only as the source it was compiled from, and never under
ASYNCSCHED_PURE (asyncsched/_compiled.py)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from asyncsched import _compiled
from asyncsched.model import kernels
from asyncsched.model.job import JobInfo

ROOT = Path(__file__).resolve().parents[2]


def _package(tmp_path: Path, sources: dict[str, str], extensions: tuple[str, ...]) -> Path:
    """A package ``fakepkg`` with these modules' sources and an (unloadable) extension
    file beside the ones named."""
    package = tmp_path / "fakepkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name, text in sources.items():
        (package / f"{name}.py").write_text(text)
    for name in extensions:
        (package / f"{name}{EXTENSION_SUFFIXES[0]}").write_bytes(b"not a real extension")
    return package


def _finder(
    package: Path,
    built: dict[str, str],
    why: str = "",
    cimports: dict[str, list[str]] | None = None,
) -> _compiled.CompiledModules:
    return _compiled.CompiledModules("fakepkg", str(package), built, cimports or {}, bool(why), why)


def _hash(package: Path, name: str) -> str:
    return _compiled.module_hash(str(package / name))


def _extension_type(cls: type) -> bool:
    """Not made by a class statement (Py_TPFLAGS_HEAPTYPE unset): the compiled class."""
    return not cls.__flags__ & (1 << 9)


def test_an_extension_built_from_the_source_as_it_is_runs(tmp_path: Path) -> None:
    package = _package(tmp_path, {"core": "x = 1\n"}, ("core",))
    built = {"fakepkg.core": _hash(package, "core")}
    finder = _finder(package, built)
    assert finder.find_spec("fakepkg.core", [str(package)]) is None  # the usual finders: the .so
    assert finder.describe() == "compiled modules: 1 of 1"
    assert finder.count() == 1


def test_an_edited_source_runs_from_source_and_is_named(tmp_path: Path) -> None:
    package = _package(tmp_path, {"core": "x = 1\n", "other": "y = 2\n"}, ("core", "other"))
    built = {
        "fakepkg.core": _hash(package, "core"),
        "fakepkg.other": _hash(package, "other"),
    }
    (package / "core.py").write_text("x = 2\n")  # edited after the build
    finder = _finder(package, built)
    spec = finder.find_spec("fakepkg.core", [str(package)])
    assert spec is not None and spec.origin == str(package / "core.py")
    assert finder.find_spec("fakepkg.other", [str(package)]) is None
    assert finder.describe() == (
        "compiled modules: 1 of 2 (from source, changed or missing since the build, or "
        "cimporting one that is: fakepkg.core; rebuild)"
    )


def test_an_edited_pxd_makes_its_module_stale(tmp_path: Path) -> None:
    package = _package(tmp_path, {"core": "class C:\n    pass\n"}, ("core",))
    (package / "core.pxd").write_text("cdef class C:\n    cdef public object a\n")
    finder = _finder(package, {"fakepkg.core": _hash(package, "core")})
    assert finder.find_spec("fakepkg.core", [str(package)]) is None
    (package / "core.pxd").write_text("cdef class C:\n    cdef public object b\n")
    spec = finder.find_spec("fakepkg.core", [str(package)])
    assert spec is not None and spec.origin == str(package / "core.py")


def test_a_module_cimporting_a_stale_one_runs_from_source(tmp_path: Path) -> None:
    """A compiled subclass of a compiled base that now runs from source would not load."""
    names = ("base", "sub", "other")
    package = _package(tmp_path, {name: f"{name} = 1\n" for name in names}, names)
    built = {f"fakepkg.{name}": _hash(package, name) for name in names}
    finder = _finder(package, built, cimports={"fakepkg.sub": ["fakepkg.base"]})
    assert finder.find_spec("fakepkg.sub", [str(package)]) is None
    (package / "base.py").write_text("base = 2\n")
    for name in ("base", "sub"):
        spec = finder.find_spec(f"fakepkg.{name}", [str(package)])
        assert spec is not None and spec.origin == str(package / f"{name}.py")
    assert finder.find_spec("fakepkg.other", [str(package)]) is None
    assert finder.current() == ["fakepkg.other"]
    assert "fakepkg.base, fakepkg.sub;" in finder.describe()


def test_a_cycle_of_cimports_ends_and_goes_stale_together(tmp_path: Path) -> None:
    names = ("a", "b")
    package = _package(tmp_path, {name: f"{name} = 1\n" for name in names}, names)
    built = {f"fakepkg.{name}": _hash(package, name) for name in names}
    cycle = {"fakepkg.a": ["fakepkg.b"], "fakepkg.b": ["fakepkg.a"]}
    finder = _finder(package, built, cimports=cycle)
    assert finder.current() == ["fakepkg.a", "fakepkg.b"]
    (package / "b.py").write_text("b = 2\n")
    assert finder.current() == []
    spec = finder.find_spec("fakepkg.a", [str(package)])
    assert spec is not None and spec.origin == str(package / "a.py")


def _slots(source: Path) -> dict[str, tuple[list[str], set[str]]]:
    """Each class of a module with ``__slots__``: its bases' names and its slots."""
    found = {}
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, ast.Assign) and ast.unparse(statement.targets[0]) == (
                    "__slots__"
                ):
                    slots = set(ast.literal_eval(statement.value))
                    found[node.name] = ([ast.unparse(b) for b in node.bases], slots)
    return found


def _pxd_classes(pxd: Path) -> dict[str, tuple[list[str], set[str]]]:
    """Each class a ``.pxd`` declares: its bases' names and its fields."""
    classes: dict[str, tuple[list[str], set[str]]] = {}
    current = ""
    for line in pxd.read_text().splitlines():
        header = re.fullmatch(r"cdef class (\w+)(?:\((\w+)\))?:", line)
        if header:
            current = header[1]
            classes[current] = ([header[2]] if header[2] else [], set())
        elif line.startswith("    cdef public object "):
            classes[current][1].update(line.split(" object ")[1].replace(" ", "").split(","))
        else:
            assert not line.strip() or line.lstrip().startswith(
                ("#", "from ", "cimport cython", "@cython.locals(", "cpdef ")
            ), (pxd, line)
    return classes


_PXDS = sorted((ROOT / "asyncsched").glob("*/*.pxd"))


def test_every_pxd_declares_its_classes_as_their_slots_say() -> None:
    """A compiled class has the fields its ``.pxd`` declares and no others: a slot added to
    the ``.py`` alone would be missing only when compiled."""
    assert _PXDS
    for pxd in _PXDS:
        assert _pxd_classes(pxd) == _slots(pxd.with_suffix(".py")), pxd


def test_a_typed_method_given_none_or_another_class_refuses_it() -> None:
    """None reaching a variable a .pxd types raises AttributeError, as interpreted (the
    core compiles with nonecheck; without it the read follows a null pointer); another
    class's object is refused before the method changes anything."""
    job = JobInfo(uid="ns/j", name="j", namespace="ns")
    with pytest.raises(AttributeError):
        job.add_task(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError if _extension_type(JobInfo) else AttributeError):
        job.remove_task(object())  # type: ignore[arg-type]
    assert not job.tasks


def test_an_extension_the_build_no_longer_lists_never_runs(tmp_path: Path) -> None:
    package = _package(tmp_path, {"core": "x = 1\n"}, ("core",))
    spec = _finder(package, {}).find_spec("fakepkg.core", [str(package)])
    assert spec is not None and spec.origin == str(package / "core.py")


def test_pure_runs_every_module_from_source(tmp_path: Path) -> None:
    package = _package(tmp_path, {"core": "x = 1\n"}, ("core",))
    built = {"fakepkg.core": _hash(package, "core")}
    finder = _finder(package, built, why="ASYNCSCHED_PURE")
    spec = finder.find_spec("fakepkg.core", [str(package)])
    assert spec is not None and spec.origin == str(package / "core.py")
    assert finder.describe() == "compiled modules: no (disabled by ASYNCSCHED_PURE)"
    assert finder.count() == 0


def test_modules_without_an_extension_and_other_packages_are_left_alone(tmp_path: Path) -> None:
    package = _package(tmp_path, {"plain": "x = 1\n"}, ())
    finder = _finder(package, {})
    assert finder.find_spec("fakepkg.plain", [str(package)]) is None
    assert finder.find_spec("json.decoder", [str(package)]) is None
    assert finder.find_spec("fakepkg", None) is None


def test_this_build_runs_its_core_compiled() -> None:
    """Where the kernels compiled, the core compiled too (one toolchain), and every module
    the build compiled is the one imported."""
    state = _compiled.state()
    if state.pure:
        assert state.count() == 0
        return
    if not kernels.NATIVE:  # no compiler at install time: nothing compiled
        assert state.count() == 0 and not state.built
        return
    assert state.count() == len(state.built)
    assert len(state.built) > 80, "the build compiled the kernels but not the core"
    assert state.current() == sorted(state.built), state.describe()
    for name in ("asyncsched.framework.session", "asyncsched.cache.snapshots"):
        module = importlib.import_module(name)
        assert module.__file__ is not None and module.__file__.endswith(tuple(EXTENSION_SUFFIXES))
    manifest = json.loads((ROOT / "asyncsched" / _compiled.MANIFEST).read_text())
    assert "asyncsched.framework.hookspecs" not in manifest["modules"]
    assert manifest["cimports"]["asyncsched.model.task"] == ["asyncsched.model.journal"]
    for used in manifest["cimports"].values():
        assert set(used) <= set(manifest["modules"]), used  # only the core's own modules
    for pxd in _PXDS:  # every class a .pxd declares: a .pxd the build missed shows here
        module = ".".join(pxd.relative_to(ROOT).with_suffix("").parts)
        for cls in _pxd_classes(pxd):
            made = getattr(importlib.import_module(module), cls)
            assert _extension_type(made), f"{module}.{cls} is not an extension type"


def _asyncsched(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    """The command's output; it must succeed."""
    done = subprocess.run(
        [sys.executable, "-m", "asyncsched", *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_same_simulation_compiled_and_from_source(tmp_path: Path) -> None:
    """The example's event stream, byte for byte: with the compiled core and kernels, with
    the core from source (ASYNCSCHED_COMPILED_MODULES=0, as the benchmarks profile it) and
    with neither (ASYNCSCHED_PURE=1)."""
    settings = {
        "compiled": ({}, _compiled.state().describe()),
        "core from source": (
            {"ASYNCSCHED_COMPILED_MODULES": "0"},
            "compiled modules: no (disabled by ASYNCSCHED_COMPILED_MODULES=0)",
        ),
        "pure": ({"ASYNCSCHED_PURE": "1"}, "compiled modules: no (disabled by ASYNCSCHED_PURE)"),
    }
    streams = {}
    for name, (extra, expected) in settings.items():
        events = tmp_path / f"events-{len(streams)}.jsonl"
        unset = ("ASYNCSCHED_PURE", "ASYNCSCHED_COMPILED_MODULES")
        env = {k: v for k, v in os.environ.items() if k not in unset}
        env.update(extra, PYTHONPATH=str(ROOT))
        _asyncsched(
            ["simulate", "--example", "gpu-cluster", "--events", str(events)], tmp_path, env
        )
        version = _asyncsched(["version"], tmp_path, env)
        assert expected in version.splitlines(), (name, version)
        if name == "core from source":
            assert kernels.describe() in version.splitlines(), version  # kernels unchanged
        streams[name] = events.read_bytes()
    assert streams["compiled"] == streams["core from source"] == streams["pure"]
    assert streams["compiled"].count(b"\n") > 30


def _sibling_names(tree: ast.Module) -> list[str]:
    """Inner functions named by another closure of the same function: compiled, the
    shared scope holds the one and is held by it."""
    found = []
    for outer in ast.walk(tree):
        if not isinstance(outer, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        inner = {
            node.name: node
            for node in ast.walk(outer)
            if node is not outer and isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        for closure in ast.walk(outer):
            if closure is outer or not isinstance(
                closure, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            ):
                continue
            own = getattr(closure, "name", None)
            named = {n.id for n in ast.walk(closure) if isinstance(n, ast.Name)}
            for name in sorted((named & set(inner)) - {own}):  # recursion: a cycle either way
                found.append(f"{outer.name}: {own or 'a lambda'} names {name}")
    return found


def test_no_compiled_closure_names_another_inner_function() -> None:
    """A session's helpers freed by reference counting, compiled as interpreted: no
    compiled module has an inner function that another closure names."""
    found = []
    for package in ("model", "cache", "framework", "actions", "plugins"):  # setup.py's
        for path in sorted((ROOT / "asyncsched" / package).glob("*.py")):
            found += [f"{path}: {f}" for f in _sibling_names(ast.parse(path.read_text()))]
    assert not found
    shared = "def f():\n    def a(): return 1\n    return lambda: a()\n"
    assert _sibling_names(ast.parse(shared)) == ["f: a lambda names a"]
