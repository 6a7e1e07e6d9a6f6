"""The site's four directives and its API reference's signatures, so that what a page shows comes from the code.

``exampleinclude``
    Apache's directive of that name (not on PyPI), re-made: a ``literalinclude`` of a file of
    ``example_dags/`` only, whole or between its ``# [START name]`` / ``# [END name]`` markers
    (``:marker: name``), captioned with its path. A DAG shown on a page is the one the tests run.

``argument-table``
    The arguments of an operator or sensor as a table: type and default from its ``__init__``
    signatures, *templated* from ``template_fields``, the description from the ``:param:`` lines
    of the docstrings along its bases. The directive's content lists every argument, in the
    order shown, each with what it costs in credits (``name: cost``, or ``name:`` for nothing, shown
    as a dash).
    An argument of the code missing from the list, one listed that the code lacks, or one
    without a ``:param:`` line fails the build.

``where-functions``
    The functions a ``where`` may call, per warehouse, as a table read from each dialect's
    ``where_functions`` (no argument, no content).

``api-modules``
    (reStructuredText pages) a section per module of a package, with ``automodule``:
    ``.. api-modules:: airflow_provider_namelookup.hooks``; ``:recursive:`` takes
    sub-packages too, ``:exclude:`` leaves modules out (documented on another page), ``:first:``
    puts the modules a reader comes for before the others, ``:internal:`` documents modules after
    the others under *Internals*, out of the page's navigation. The navigation lists modules,
    classes and functions, not their methods and attributes.

Whole signatures
    An operator's, sensor's, hook's or trigger's ``__init__`` passes ``**kwargs`` to its bases, some
    of them private (``_SqlLookupOperator``): autodoc would show only the first ``__init__``'s
    arguments, and name a base that is not documented. Its signature here is every argument of the
    ``__init__`` chain down to Airflow's own ``BaseOperator`` / ``BaseHook`` / ``BaseTrigger``
    (whose arguments stay ``**kwargs``), required ones first, with types and defaults; its
    *Parameters* take the ``:param:`` lines of those classes too; and a private base is shown as
    its own bases.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude
from sphinx.util.docutils import SphinxDirective
from sphinx.util.inspect import stringify_signature
from sphinx.util.nodes import nested_parse_with_titles

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "example_dags"
PACKAGE = "airflow_provider_namelookup"


class ExampleInclude(LiteralInclude):
    """``literalinclude`` restricted to ``example_dags/``, with Apache's ``[START]``/``[END]`` markers."""

    option_spec: ClassVar[dict[str, Any]] = {**LiteralInclude.option_spec, "marker": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        _, path = self.env.relfn2path(self.arguments[0])
        if Path(path).resolve().parent != EXAMPLES:
            raise self.error(f"exampleinclude shows files of example_dags/ only, not {self.arguments[0]}")
        marker = self.options.pop("marker", None)
        if marker:
            self.options["start-after"] = f"# [START {marker}]"
            self.options["end-before"] = f"# [END {marker}]"
            self.options.setdefault("dedent", None)  # as deep as the marked lines have in common
        self.options.setdefault("language", "python")
        self.options.setdefault("caption", f"example_dags/{Path(path).name}")
        return super().run()


def _param_docs(doc: str) -> dict[str, str]:
    """``{name: text}`` of the ``:param name: text`` lines of a docstring (continuations joined)."""
    found: dict[str, str] = {}
    for match in re.finditer(r"^\s*:param (\w+):(.*(?:\n(?!\s*:|\s*$).*)*)", inspect.cleandoc(doc), flags=re.M):
        found[match.group(1)] = " ".join(match.group(2).split())
    return found


def _markdown(rst: str) -> str:
    """A docstring's inline reST as MyST Markdown: roles become ``{role}`...```."""
    return re.sub(r":(\w+(?::\w+)?):`", r"{\1}`", rst)


NAVIGATED = {"module", "class", "exception", "function"}
"""What an API page's navigation lists (its methods, attributes and constants are on the page only)."""
AIRFLOW_BASES = {"BaseOperator", "BaseHook", "BaseTrigger"}
"""Where a whole signature stops: these classes' arguments (every task's, every hook's) stay ``**kwargs``."""


def init_chain(cls: type) -> tuple[list[type], bool]:
    """The classes of ``cls``'s MRO whose ``__init__`` a whole signature reads: each that the one
    before passes its ``**kwargs`` to, down to :data:`AIRFLOW_BASES`; and whether the last passes
    ``**kwargs`` on to those."""
    chain: list[type] = []
    passes_on = True
    for klass in cls.__mro__:
        if klass is object or (klass.__name__ in AIRFLOW_BASES and klass.__module__.startswith("airflow.")):
            break
        if "__init__" not in klass.__dict__:
            continue
        chain.append(klass)
        passes_on = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(klass.__init__).parameters.values())
        if not passes_on:
            break
    return chain, passes_on and bool(chain)


def whole_signature(cls: type) -> str | None:
    """``(*, key_column: str, ..., **kwargs)``: every argument of :func:`init_chain`, required ones
    first; None when the first ``__init__`` already has them all."""
    chain, passes_on = init_chain(cls)
    if len(chain) < 2:
        return None
    positional: list[inspect.Parameter] = []
    keywords: dict[str, inspect.Parameter] = {}
    for klass in chain:
        for name, param in list(inspect.signature(klass.__init__).parameters.items())[1:]:
            if param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL) or name in keywords \
                    or any(p.name == name for p in positional):
                continue
            if param.kind is param.KEYWORD_ONLY or klass is not chain[0]:
                keywords[name] = param.replace(kind=param.KEYWORD_ONLY)
            else:
                positional.append(param)
    ordered = sorted(keywords.values(), key=lambda p: p.default is not p.empty)  # stable: required first
    parts = [_shown(p) for p in positional] + (["*"] if ordered else []) + [_shown(p) for p in ordered]
    return f"({', '.join(parts + (['**kwargs'] if passes_on else []))})"


def _shown(param: inspect.Parameter) -> str:
    annotation = "" if param.annotation is param.empty else f": {param.annotation}"
    default = "" if param.default is param.empty else f" = {param.default!r}"
    return f"{param.name}{annotation}{default}"


def _whole_signature(app: Sphinx, what: str, name: str, obj: Any, options: Any, signature: str | None,
                     return_annotation: str | None) -> tuple[str, str | None] | None:
    if what == "method" and isinstance(obj, functools.partial):
        # A hook-or-class method (``sign_up``) reaches autodoc bound to the class and no hook, and
        # autodoc drops the first remaining parameter as if it were ``self``: show what a caller passes.
        shown = stringify_signature(inspect.signature(obj), unqualified_typehints=True)
        return shown.split(" -> ")[0], return_annotation
    if what != "class" or not getattr(obj, "__module__", "").startswith(PACKAGE) \
            or (whole := whole_signature(obj)) is None:
        return None
    return whole, return_annotation


def _inherited_params(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A class's *Parameters* with the ``:param:`` lines of the rest of its ``__init__`` chain."""
    if what != "class" or not getattr(obj, "__module__", "").startswith(PACKAGE):
        return
    chain, _ = init_chain(obj)
    own = _param_docs("\n".join(lines))
    added = []
    for klass in chain:
        for param, text in _param_docs(klass.__doc__ or "").items():
            if param not in own:
                own[param] = text
                added.append(f":param {param}: {text}")
    if added:
        lines += ["", *added, ""]


def _public_bases(app: Sphinx, name: str, obj: Any, options: Any, bases: list[type]) -> None:
    """A private base (``_SqlLookupOperator``), which the reference does not document, shown as its own bases."""
    shown: list[type] = []
    for base in bases:
        for public in ([base] if not base.__name__.startswith("_") else _public_of(base)):
            if public not in shown:
                shown.append(public)
    bases[:] = shown


def _public_of(base: type) -> list[type]:
    found: list[type] = []
    for parent in base.__bases__:
        found += [parent] if not parent.__name__.startswith("_") else _public_of(parent)
    return found


COLUMNS = [("argument", 23), ("templated", 15), ("credits", 24), ("what it does", 38)]
"""The argument table's columns and their widths (per cent)."""


class ArgumentTable(SphinxDirective):
    """The table of an operator's or sensor's arguments (see the module's docstring)."""

    required_arguments = 1
    has_content = True

    def run(self) -> list[nodes.Node]:
        module_name, _, class_name = self.arguments[0].rpartition(".")
        cls = getattr(importlib.import_module(module_name), class_name)
        docs: dict[str, str] = {}
        signature: dict[str, inspect.Parameter] = {}
        own: list[str] = []
        for klass in cls.__mro__:
            for name, text in _param_docs(klass.__doc__ or "").items():
                docs.setdefault(name, text)
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            for name, param in inspect.signature(init).parameters.items():
                if name == "self" or param.kind in (param.VAR_KEYWORD, param.VAR_POSITIONAL):
                    continue
                signature.setdefault(name, param)
                if klass.__module__.startswith(PACKAGE) and name not in own:
                    own.append(name)
        listed: dict[str, str] = {}
        for line in self.content:
            if line.strip():
                name, sep, cost = line.partition(":")
                if not sep:
                    raise self.error(f"argument-table: {line!r} is not 'name: cost'")
                listed[name.strip()] = cost.strip()
        problems = [f"{name} (an argument of {class_name}) is not listed" for name in own if name not in listed]
        problems += [f"{name} is not an argument of {class_name}" for name in listed if name not in signature]
        problems += [f"{name} has no :param: line in the docstrings of {class_name}" for name in listed
                     if name not in docs]
        if problems:
            raise self.error("argument-table: " + "; ".join(problems))
        templated = set(getattr(cls, "template_fields", ()))
        table = nodes.table(classes=["argument-table", "colwidths-given"])
        group = nodes.tgroup(cols=len(COLUMNS))
        table += group
        group += [nodes.colspec(colwidth=width) for _, width in COLUMNS]
        head = nodes.thead()
        head += _table_row([nodes.paragraph(text=title) for title, _ in COLUMNS])
        body = nodes.tbody()
        for name, cost in listed.items():
            param = signature[name]
            lines = nodes.line_block()
            lines += nodes.line("", "", nodes.strong("", "", nodes.literal(text=name)))
            if param.annotation is not param.empty:
                lines += nodes.line("", "", nodes.literal(text=str(param.annotation)))
            lines += nodes.line("", "required" if param.default is param.empty else "default ",
                                *([] if param.default is param.empty else [nodes.literal(text=repr(param.default))]))
            body += _table_row([lines, nodes.paragraph(text="yes" if name in templated else "no"),
                               *self._markdown_cell(cost or "—"), *self._markdown_cell(docs[name])])
        group += [head, body]
        return [table]

    def _markdown_cell(self, text: str) -> list[nodes.Node]:
        """``text`` (a docstring's inline reST, or MyST) parsed as the page's Markdown: one paragraph."""
        holder = nodes.container()
        self.state.nested_parse(StringList([_markdown(text)], source=self.get_source_info()[0]),
                                self.content_offset, holder)
        return [nodes.container("", *holder.children)]


def _table_row(cells: list[nodes.Node]) -> nodes.row:
    row = nodes.row()
    for cell in cells:
        entry = nodes.entry()
        entry += cell
        row += entry
    return row


def _modules(package: str, recursive: bool) -> list[str]:
    root = importlib.import_module(package)
    found = [package]
    for info in pkgutil.iter_modules(root.__path__, package + "."):
        if info.name.rpartition(".")[2].startswith("_"):
            continue
        if not info.ispkg:
            found.append(info.name)
        elif recursive:
            found += _modules(info.name, recursive)
    return found


def _claimed(module_name: str) -> list[type]:
    """The classes written in another module that name ``module_name`` as their ``__module__`` (the
    hooks, written in ``hooks/sync.py`` and ``hooks/asynchronous.py``, claimed by ``hooks/namelookup.py``),
    in the order of its ``__all__``."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or list(vars(module))
    return [obj for obj in map(vars(module).get, names) if inspect.isclass(obj) and obj.__module__ == module_name
            and any(inspect.isfunction(member) and member.__code__.co_filename != module.__file__
                    for member in vars(obj).values())]


def _automodule(name: str) -> list[str]:
    """``automodule`` for a module; a class it claims (:func:`_claimed`) is documented after it, a member at
    a time in the order of its class body: autodoc reads the order from the source of the ``__module__``,
    which does not hold the class, and would list its members alphabetically."""
    claimed = _claimed(name)
    lines = [f".. automodule:: {name}", "   :ignore-module-all:"]
    if not claimed:
        return [*lines, ""]
    lines += [f"   :exclude-members: {', '.join(cls.__name__ for cls in claimed)}", ""]
    for cls in claimed:
        lines += [f".. autoclass:: {name}.{cls.__name__}", "   :no-members:", ""]
        for member, value in vars(cls).items():
            # what autodoc would list: public descriptors (methods, properties) with a docstring
            if member.startswith("_") or not hasattr(type(value), "__get__") or not (value.__doc__ or "").strip():
                continue
            kind = "autoproperty" if isinstance(value, property | functools.cached_property) else "automethod"
            lines += [f"   .. {kind}:: {name}.{cls.__name__}.{member}", ""]
    return lines


class ApiModules(SphinxDirective):
    """A section per module of a package, documented by ``automodule`` (reStructuredText pages)."""

    required_arguments = 1
    option_spec: ClassVar[dict[str, Any]] = {"recursive": directives.flag, "exclude": directives.unchanged,
                                             "first": directives.unchanged, "internal": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        exclude = set((self.options.get("exclude") or "").split())
        first = (self.options.get("first") or "").split()
        found = _modules(self.arguments[0], "recursive" in self.options)
        if set(first) - set(found):
            raise self.error(f"api-modules: :first: names modules that are not there: {set(first) - set(found)}")
        internal = (self.options.get("internal") or "").split()
        if set(internal) - set(found):
            raise self.error(f"api-modules: :internal: names modules that are not there: {set(internal) - set(found)}")
        lines: list[str] = []
        for name in [*first, *(m for m in found if m not in first and m not in internal)]:
            if name in exclude:
                continue
            title = name.removeprefix(f"{PACKAGE}.")  # short enough for a heading; the target keeps the full name
            # ignore-module-all: a package's re-exports are documented in their own modules, once
            lines += [f"``{title}``", "-" * (len(title) + 4), "", *_automodule(name)]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=self.get_source_info()[0]), node)
        parsed = list(node.children)
        if internal:
            parsed += self._internals(internal)
        for found_node in parsed:
            for description in found_node.findall(addnodes.desc):
                if description.get("objtype") not in NAVIGATED:
                    description["no-contents-entry"] = description["nocontentsentry"] = True
        return parsed

    def _internals(self, modules: list[str]) -> list[nodes.Node]:
        """The ``internal`` modules, each under a rubric (not a section), none of their objects in the
        page's navigation."""
        lines = ["Internals", "-" * 9, "", "What the classes above are built from, for those who extend or debug "
                 "them; nothing a DAG needs.", ""]
        for name in modules:
            lines += [f".. rubric:: ``{name.removeprefix(f'{PACKAGE}.')}``", "", *_automodule(name)]
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source=self.get_source_info()[0]), node)
        for description in node.findall(addnodes.desc):
            description["no-contents-entry"] = description["nocontentsentry"] = True
        return list(node.children)


class WhereFunctions(SphinxDirective):
    """The functions each warehouse's ``where`` may call (``warehouse/dialects/where_functions.py``)."""

    def run(self) -> list[nodes.Node]:
        from airflow_provider_namelookup.warehouse.dialects import all_dialects

        rows = [(dialect.name, ", ".join(dialect.where.functions)) for dialect in all_dialects()]
        table = nodes.table(classes=["where-functions"])
        group = nodes.tgroup(cols=2)
        table += group
        group += [nodes.colspec(colwidth=1), nodes.colspec(colwidth=4)]
        head = nodes.thead()
        head += _table_row([nodes.paragraph(text="warehouse"), nodes.paragraph(text="functions a where may call")])
        body = nodes.tbody()
        for name, functions in rows:
            body += _table_row([nodes.paragraph("", "", nodes.literal(text=name)), nodes.paragraph(text=functions)])
        group += [head, body]
        return [table]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("exampleinclude", ExampleInclude)
    app.add_directive("argument-table", ArgumentTable)
    app.add_directive("api-modules", ApiModules)
    app.add_directive("where-functions", WhereFunctions)
    app.connect("autodoc-process-signature", _whole_signature)
    app.connect("autodoc-process-docstring", _inherited_params)
    app.connect("autodoc-process-bases", _public_bases)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
