"""Turn an answers table into a pseudonymised one (or one under a new key) without paying again.

An answers table is keyed by a hash of each question, which cannot be reversed: so the migration
reads the questions again from their source (the table the operators enrich), and for each distinct
value computes its key in the old table (plain, or under the old key) and in the new one (under the
new key), then copies the answer with every echo of the name pseudonymised under the new key. Nothing
is sent to the service; an answer the old table does not hold is left for the next run to pay.

- **clear → pseudonymised**: the echoes (``first_name``, ``last_name``, ``input``, the sanitized names
  in ``result_json``) are read in clear and hashed.
- **old key → new key** (rotation): the old pseudonyms cannot be re-keyed; what the question itself
  says is hashed again (``input``, an e-mail's or a full name's sanitized form, a first name's echo),
  and the service's own split of a full name or an e-mail (``first_name``, ``last_name``) is left
  empty until the answer is asked again (``max_age``). The answers themselves are copied as they are.

The copied rows keep their price (``credits``, ``paid_for``), so a target's ``credits_used`` still
sums to what its answers cost; ``answered_by`` is ``migrated``. Running it again copies nothing twice.
See the docs' "Personal data: keys" page for the whole procedure.

Example (a clear table of a DAG that enriches e-mails, into a pseudonymised one)::

    python -m airflow_provider_namelookup.personal.migrate --conn-id warehouse \\
        --source-table customers --key-column customer_id --name-column email --name-kind email \\
        --lookup gender --from-answers namelookup_answers --to-answers namelookup_answers_customers_daily

or in Python::

    counts = migrate_answers(hook, TableSource(dialect, table="customers", key_column="customer_id",
                                               name_column="email"),
                             QueryRules(LookupKind.GENDER, "email"), from_table="namelookup_answers",
                             to_table="namelookup_answers_customers_daily", from_key=None, to_key=key)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules, build_query_object, plan_value
from airflow_provider_namelookup.engine.ports import SourceValue
from airflow_provider_namelookup.errors import NameLookupValidationError
from airflow_provider_namelookup.models import NAME_KINDS, Query
from airflow_provider_namelookup.personal.pseudonym import (
    DEFAULT_PSEUDONYMISATION_CONN_ID,
    ECHOED_NAMES,
    Pseudonymiser,
    pseudonymisation_key,
)
from airflow_provider_namelookup.warehouse.answers import answers_table_statements
from airflow_provider_namelookup.warehouse.identifiers import check_identifier
from airflow_provider_namelookup.warehouse.schema import ANSWER_RESULTS, STATE_ANSWERED
from airflow_provider_namelookup.warehouse.session import WarehouseSession
from airflow_provider_namelookup.warehouse.source import TableSource

MIGRATED_BY = "migrated"
"""``answered_by`` of a copied answer (no task instance paid for it in this table)."""
_KEPT = ("lookup", "answered_at", "credits", "paid_for")


@dataclass
class MigrationCounts:
    """What a migration did, in counts (never values).

    :param values: distinct source values read.
    :param invalid: of them, values no query can be made of (they cost nothing anyway).
    :param copied: answers copied into the new table.
    :param present: answers the new table already held.
    :param missing: questions the old table has no answer to: the next run pays for them.
    """

    values: int = 0
    invalid: int = 0
    copied: int = 0
    present: int = 0
    missing: int = 0


def migrate_answers(hook: Any, source: TableSource, rules: QueryRules, *, from_table: str, to_table: str,
                    from_key: bytes | None, to_key: bytes) -> MigrationCounts:
    """Copy the answers to ``source``'s questions from ``from_table`` (clear when ``from_key`` is None,
    else pseudonymised under it) into ``to_table`` (made if missing), pseudonymised under ``to_key``.

    :param rules: how the operator reads the source (lookup, ``name_kind``, default hints, last names);
        their ``identity_key`` is ignored (the keys given here are used).
    """
    check_identifier(from_table, "from_table", qualified=True)
    check_identifier(to_table, "to_table", qualified=True)
    if from_table == to_table:
        raise ValueError("from_table and to_table must differ: a migration writes a new table beside the old one")
    session = WarehouseSession(hook)
    try:  # a session's statements run on its own thread
        return asyncio.run(session.run(_Migration(session, source, rules, from_table, to_table, from_key,
                                                  to_key).run))
    finally:
        session.shutdown()


class _Migration:
    def __init__(self, session: WarehouseSession, source: TableSource, rules: QueryRules, from_table: str,
                 to_table: str, from_key: bytes | None, to_key: bytes) -> None:
        self.session = session
        self.d = session.dialect
        self.source = source
        self.old_rules = replace(rules, identity_key=from_key)
        self.new_rules = replace(rules, identity_key=to_key)
        self.rekeying = from_key is not None
        self.old = self.d.quote(from_table)
        self.new = self.d.quote(to_table)
        self.to_table = to_table
        self.hide = Pseudonymiser(to_key)
        self.counts = MigrationCounts()

    def run(self) -> MigrationCounts:
        questions = self._questions()
        self._make_new_table()
        present = self._present({new for new, _ in questions.values()})
        self.counts.present = len(present)
        columns = ["query_hash", *_KEPT, *(c.name for c in ANSWER_RESULTS)]
        rows = []
        for old_hash, found in self._old_answers(list(questions)).items():
            new_hash, query = questions[old_hash]
            if new_hash in present:
                continue
            present.add(new_hash)
            rows.append(self._copied(new_hash, query, found))
        self.counts.copied = len(rows)
        self.counts.missing = len({new for new, _ in questions.values()} - present)
        self.session.load(self.new, [*columns[:1], "state", "answered_by", *columns[1:]],
                          [(row[0], STATE_ANSWERED, MIGRATED_BY, *row[1:]) for row in rows])
        self.session.commit()
        return self.counts

    def _questions(self) -> dict[str, tuple[str, Query]]:
        """Old hash → (new hash, query) of every distinct valid source value."""
        n = self.source.names(with_params=False)
        read = self.session.fetchall(f"SELECT DISTINCT {n.name}, {n.last_name or 'NULL'}, {n.country or 'NULL'} "
                                     f"FROM {n.relation} s")
        questions: dict[str, tuple[str, Query]] = {}
        for name, last_name, country in read:
            self.counts.values += 1
            try:
                raw = build_query_object(name, self.old_rules, country=country, last_name=last_name)
            except NameLookupValidationError:
                self.counts.invalid += 1
                continue
            old = plan_value(SourceValue(None, raw), self.old_rules)
            new = plan_value(SourceValue(None, raw), self.new_rules)
            if old.query is None:
                self.counts.invalid += 1
                continue
            questions[old.query_hash] = (new.query_hash, old.query)
        return questions

    def _make_new_table(self) -> None:
        if self.session.probe(self.d.no_rows("query_hash, state, answered_by", self.new)) is None:
            return
        for statement in answers_table_statements(self.d, self.to_table):
            self.session.execute(statement)
        self.session.commit()

    def _in_chunks(self, select: str, hashes: Sequence[str], where: str = "") -> list[tuple[Any, ...]]:
        rows: list[tuple[Any, ...]] = []
        step = self.d.tuning.max_in_list
        for start in range(0, len(hashes), step):
            part = list(hashes[start:start + step])
            rows += self.session.fetchall(f"{select} WHERE query_hash IN ({self.d.marks(len(part))}){where}", part)
        return rows

    def _present(self, hashes: set[str]) -> set[str]:
        return {r[0] for r in self._in_chunks(f"SELECT query_hash FROM {self.new}", sorted(hashes))}

    def _old_answers(self, hashes: list[str]) -> dict[str, dict[str, Any]]:
        names = ["query_hash", *_KEPT, *(c.name for c in ANSWER_RESULTS)]
        rows = self._in_chunks(f"SELECT {', '.join(names)} FROM {self.old}", hashes,
                               f" AND state = '{STATE_ANSWERED}'")
        return {row[0]: dict(zip(names[1:], row[1:], strict=True)) for row in rows}

    def _copied(self, new_hash: str, query: Query, found: dict[str, Any]) -> tuple[Any, ...]:
        """The new table's row of one answer: echoes hashed under the new key, the rest as it was."""
        row = dict(found)
        if self.rekeying:  # the old pseudonyms cannot be re-keyed: what the question says is hashed again
            row["first_name"] = self.hide.value(query.name) if query.kind == "first_name" else None
            row["last_name"] = None
        else:
            row["first_name"], row["last_name"] = self.hide.value(row["first_name"]), self.hide.value(row["last_name"])
        if isinstance(row.get("result_json"), str):
            row["result_json"] = json.dumps(self._result(json.loads(row["result_json"]), new_hash, query),
                                            ensure_ascii=False, separators=(",", ":"))
        return (new_hash, *(row[k] for k in _KEPT), *(row[c.name] for c in ANSWER_RESULTS))

    def _result(self, result: dict[str, Any], new_hash: str, query: Query) -> dict[str, Any]:
        if self.rekeying:  # the question's own fields, hashed below; the service's split of it is not known
            said: dict[str, str] = {query.kind: query.name}
            result = {**result, "input": query.to_payload(),
                      **{k: said.get(k) for k in ECHOED_NAMES if k in result}}
            if isinstance(details := result.get("details"), dict):
                result["details"] = {**details, **{f"{kind}_sanitized": said.get(kind) for kind in NAME_KINDS
                                                   if f"{kind}_sanitized" in details}}
        hidden = self.hide.result(result)
        if isinstance(echoed := hidden.get("input"), dict) and "id" in echoed:
            hidden["input"] = {**echoed, "id": new_hash}  # the old id was the old (perhaps plain) hash
        return hidden


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (see the module's example); prints the counts as JSON."""
    parser = argparse.ArgumentParser(prog="python -m airflow_provider_namelookup.personal.migrate",
                                     description="Copy an answers table into a pseudonymised one (or one under a "
                                                 "new key), reading the questions from their source; pays nothing.")
    parser.add_argument("--conn-id", required=True, help="the warehouse's Airflow connection")
    parser.add_argument("--source-table", help="the table the operators enrich (or --sql)")
    parser.add_argument("--sql", help="the SELECT the operators enrich")
    parser.add_argument("--key-column", required=True)
    parser.add_argument("--name-column", required=True)
    parser.add_argument("--last-name-column")
    parser.add_argument("--country-column")
    parser.add_argument("--country", help="the operators' default country hint")
    parser.add_argument("--lookup", choices=[k.value for k in LookupKind], default=LookupKind.GENDER.value)
    parser.add_argument("--name-kind", choices=["first_name", "full_name", "email"], default="first_name")
    parser.add_argument("--from-answers", required=True, help="the answers table to read")
    parser.add_argument("--to-answers", required=True, help="the pseudonymised answers table to write")
    parser.add_argument("--from-key-conn-id", help="the old key's connection (rotation); omitted: the old table "
                                                   "is clear")
    parser.add_argument("--to-key-conn-id", default=DEFAULT_PSEUDONYMISATION_CONN_ID)
    args = parser.parse_args(argv)

    from airflow.providers.common.compat.sdk import BaseHook

    from airflow_provider_namelookup.operators.sql_hook import sql_hook
    from airflow_provider_namelookup.warehouse.dialects import dialect_for

    hook = sql_hook(args.conn_id) or BaseHook.get_connection(args.conn_id).get_hook()
    lookup = LookupKind(args.lookup)
    rules = QueryRules(lookup, args.name_kind, default_country=args.country if lookup.takes_hints else None,
                       last_names=args.last_name_column is not None)
    source = TableSource(dialect_for(hook), table=args.source_table, sql=args.sql,
                         key_column=args.key_column, name_column=args.name_column,
                         country_column=args.country_column if lookup.takes_hints else None,
                         last_name_column=args.last_name_column)
    counts = migrate_answers(hook, source, rules, from_table=args.from_answers, to_table=args.to_answers,
                             from_key=pseudonymisation_key(args.from_key_conn_id) if args.from_key_conn_id else None,
                             to_key=pseudonymisation_key(args.to_key_conn_id))
    print(json.dumps(asdict(counts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
