"""Builds the SQLite extension (csrc/, the project's ext/ sources) into the
package as sqlite_bert/bert.so (bert.dylib on macOS).  The package also
carries the project's demo model (model/demo/) as sqlite_bert/demo_model/,
which sqlite_bert.load registers; `make python-package` stages both.

The extension is a SQLite loadable library, not a Python C module: it uses no
Python headers, exports sqlite3_bert_init, and its file name carries no Python
version tag, so one wheel serves every Python 3 on the platform.
"""
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = "csrc"

# (header, what it is, pkg-config name, library, Debian package, Homebrew formula)
DEPENDENCIES = [
    ("sqlite3ext.h", "SQLite", "sqlite3", None, "libsqlite3-dev", "sqlite"),
    ("cblas.h", "OpenBLAS", "openblas", "openblas", "libopenblas-dev", "openblas"),
    ("utf8proc.h", "utf8proc", "libutf8proc", "utf8proc", "libutf8proc-dev", "utf8proc"),
]


def version():
    header = os.path.join(HERE, CSRC, "sql", "sqlite_bert.h")
    if not os.path.exists(header):
        sys.exit("sqlite-bert: %s has no C sources (csrc/): build the package from the repository's "
                 "root with `make python-package`, which stages them" % HERE)
    with open(header, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#define SQLITE_BERT_VERSION "):
                return line.split('"')[1]
    raise RuntimeError("csrc/sql/sqlite_bert.h has no SQLITE_BERT_VERSION")


def check_demo_model():
    if not os.path.isfile(os.path.join(HERE, "sqlite_bert", "demo_model", "config.json")):
        sys.exit("sqlite-bert: %s has no demo model (sqlite_bert/demo_model/): build the package from "
                 "the repository's root with `make python-package`, which stages it" % HERE)


def homebrew_prefixes():
    """Homebrew's sqlite and openblas are keg-only: pkg-config and the
    compiler find them only under their own prefixes."""
    roots = [r for r in ("/opt/homebrew", "/usr/local") if os.path.isdir(os.path.join(r, "opt"))]
    return [os.path.join(r, "opt", f) for r in roots for f in ("sqlite", "openblas", "utf8proc")
            if os.path.isdir(os.path.join(r, "opt", f))]


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.split()


def build_flags():
    """Include directories, library directories, libraries and other flags,
    from pkg-config where it knows a dependency, else the plain names."""
    if sys.platform == "darwin":
        extra = [os.path.join(p, "lib", "pkgconfig") for p in homebrew_prefixes()]
        os.environ["PKG_CONFIG_PATH"] = os.pathsep.join(extra + [os.environ.get("PKG_CONFIG_PATH", "")])
    include_dirs, library_dirs, libraries, cflags = [], [], [], []
    for _, _, pc_name, lib, _, _ in DEPENDENCIES:
        cf = pkg_config("--cflags", pc_name)
        libs = pkg_config("--libs", pc_name) if lib else []
        if cf is None or libs is None:
            if lib:
                libraries.append(lib)
            continue
        for flag in cf:
            (include_dirs if flag.startswith("-I") else cflags).append(flag[2:] if flag.startswith("-I") else flag)
        for flag in libs:
            if flag.startswith("-L"):
                library_dirs.append(flag[2:])
            elif flag.startswith("-l"):
                libraries.append(flag[2:])
    for prefix in homebrew_prefixes():
        include_dirs.append(os.path.join(prefix, "include"))
        library_dirs.append(os.path.join(prefix, "lib"))
    return include_dirs, library_dirs, libraries + ["pthread", "m"], cflags


@contextlib.contextmanager
def quiet_output():
    """The compiler's own errors about a missing header would bury the
    message that says which package to install."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [devnull]:
            os.close(fd)


def missing_dependencies(compiler, include_dirs, dependencies=DEPENDENCIES):
    """The dependencies whose header the compiler cannot find."""
    missing = []
    tmp = tempfile.mkdtemp(prefix="sqlite-bert-check-")
    try:
        for dep in dependencies:
            src = os.path.join(tmp, "check.c")
            with open(src, "w", encoding="utf-8") as f:
                f.write("#include <%s>\nint main(void) { return 0; }\n" % dep[0])
            try:
                with quiet_output():
                    compiler.compile([src], output_dir=tmp, include_dirs=include_dirs)
            except Exception:
                missing.append(dep)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return missing


def missing_message(missing):
    names = ", ".join("%s (%s)" % (d[1], d[0]) for d in missing)
    return ("sqlite-bert: cannot build the extension: the development files of %s are missing.\n"
            "  Debian/Ubuntu:     sudo apt-get install %s\n"
            "  macOS (Homebrew):  brew install %s\n"
            "then install sqlite-bert again." % (
                names, " ".join(d[4] for d in missing), " ".join(d[5] for d in missing)))


class BuildSqliteExtension(build_ext):
    def finalize_options(self):
        super().finalize_options()
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1

    def get_ext_filename(self, fullname):
        suffix = ".dylib" if sys.platform == "darwin" else ".so"
        return os.path.join(*fullname.split(".")) + suffix

    def get_export_symbols(self, ext):
        return ["sqlite3_bert_init"]

    def build_extensions(self):
        if sys.platform == "win32":
            sys.exit("sqlite-bert: Windows is not supported; use WSL (Linux) instead")
        if shutil.which(self.compiler.compiler_so[0]) is None:
            sys.exit("sqlite-bert: no C compiler (%s) found.\n"
                     "  Debian/Ubuntu:  sudo apt-get install gcc\n"
                     "  macOS:          xcode-select --install" % self.compiler.compiler_so[0])
        ext = self.extensions[0]
        missing = missing_dependencies(self.compiler, ext.include_dirs)
        if missing:
            sys.exit(missing_message(missing))
        super().build_extensions()


def extension():
    include_dirs, library_dirs, libraries, cflags = build_flags()
    # csrc/ keeps ext/'s folders by layer; the sources include each other by relative paths.
    sources = sorted(os.path.relpath(os.path.join(root, f), HERE)
                     for root, _, files in os.walk(os.path.join(HERE, CSRC)) for f in files if f.endswith(".c"))
    return Extension(
        "sqlite_bert.bert",
        sources=sources,
        include_dirs=include_dirs,
        library_dirs=library_dirs,
        libraries=libraries,
        extra_compile_args=cflags + ["-std=c11", "-O3", "-DNDEBUG", "-fvisibility=hidden",
                                     "-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE"],
    )


def wheel_command():
    """The wheel holds no Python extension module: tag it py3-none-<platform>."""
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        return {}

    class PlatformWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    return {"bdist_wheel": PlatformWheel}


if __name__ == "__main__":
    check_demo_model()
    setup(
        version=version(),
        packages=["sqlite_bert"],
        package_data={"sqlite_bert": ["demo_model/*", "demo_model/*/*"]},
        ext_modules=[extension()],
        cmdclass={"build_ext": BuildSqliteExtension, **wheel_command()},
    )
