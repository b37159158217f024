from __future__ import annotations

import importlib.metadata


def test_each_package_is_installed_with_its_own_version() -> None:
    versions = {
        name: importlib.metadata.version(name)
        for name in ("agent-accounts", "local-daemon", "forge-automation")
    }
    assert versions["agent-accounts"].startswith("0.3.")
    assert versions["local-daemon"].startswith("0.1.")
    assert versions["forge-automation"].startswith("0.1.")


def test_lint_and_typecheck_need_neither_root_nor_the_system_tools() -> None:
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]

    def dry_run(*targets: str) -> str:
        return subprocess.run(
            ["make", "-n", "--no-print-directory", *targets],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout

    assert "apt-get" in dry_run("setup")  # the check the two targets must not run
    for target in ("lint", "typecheck"):
        plan = dry_run(target)
        assert "apt-get" not in plan, target
        assert "chromium" not in plan, target
        assert "uv sync --all-packages --locked" in plan, target


def test_no_test_module_imports_another() -> None:
    """Shared test helpers live in support modules: a test module imported by another runs its
    tests twice under one pytest path and ties one file's edits to every importer."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    dirs = [*sorted((root / "packages").glob("*/tests")), root / "tests-integration"]
    found = []
    for path in (p for d in dirs for p in d.rglob("*.py") if "node_modules" not in p.parts):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            bad = [n for n in names if n.startswith(("test_", "internal.test_"))]
            found += [f"{path.relative_to(root)}:{node.lineno}: {name}" for name in bad]
    assert found == []
