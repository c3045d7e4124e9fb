"""Rules: the compact syntax, the user's rules from settings, and the RuleEngine (SPEC A1).

A rule is ``TOOL`` or ``TOOL(SPEC)`` with an action (allow / ask / deny) and a priority:

- ``TOOL`` is a glob over the tool name: ``execute_command``, ``*``, ``github:*``;
- what SPEC means comes from the tool's declared argument roles
  (:mod:`codingcode.tools.declarations`), never from its name:
- for a tool that runs a command line (``execute_command``) SPEC is a command pattern
  matched against *every simple command* of the line (after the shell analysis):
  ``git push *`` (`` *`` at the end: any arguments, or none), ``npm run test:*`` (the same);
- for a tool whose argument names a file, a directory or a file-name glob (``read_file``,
  ``write_file``, ``edit_file``, ``search_files``, ``search_code``) SPEC is a path glob:
  ``src/**`` (relative to the project), ``/abs/**``, ``~/x``, ``**/secrets/**`` (any depth,
  anywhere); a deny or ask rule for such a tool also covers the paths a shell command names;
- for a tool that fetches a URL, ``fetch_url(domain:example.com)`` (``domain:*.example.com``
  for the subdomains), or a URL glob;
- ``TOOL(name:glob)`` matches one top-level argument; any other SPEC is a glob matched
  against each top-level string argument.

Rules are sorted by priority (higher first); at equal priority deny beats ask beats allow.
The nine preset rules come before all of them and cannot be overridden. Every rule keeps
the scope of the file it came from (user / project / local): workspace trust filters on it.

The package is split by job: :mod:`.syntax` (the rule syntax), :mod:`.matching` (compiled,
indexed patterns), :mod:`.engine` (the RuleEngine), :mod:`.suggest` (always / never),
:mod:`.policy` (the settings' ``permissions`` section) and :mod:`.store` (writing rules).
"""

from __future__ import annotations

from codingcode.approval.rules.engine import RuleEngine as RuleEngine
from codingcode.approval.rules.matching import path_pattern as path_pattern
from codingcode.approval.rules.policy import ActionRuleObject as ActionRuleObject
from codingcode.approval.rules.policy import PermissionsSettings as PermissionsSettings
from codingcode.approval.rules.policy import Policy as Policy
from codingcode.approval.rules.policy import RuleObject as RuleObject
from codingcode.approval.rules.policy import load_policy as load_policy
from codingcode.approval.rules.policy import pydantic_error as pydantic_error
from codingcode.approval.rules.policy import rules_from_section as rules_from_section
from codingcode.approval.rules.store import add_rule as add_rule
from codingcode.approval.rules.store import local_settings_path as local_settings_path
from codingcode.approval.rules.store import presets_match as presets_match
from codingcode.approval.rules.store import remove_rule as remove_rule
from codingcode.approval.rules.store import settings_path_for as settings_path_for
from codingcode.approval.rules.suggest import suggest_rule as suggest_rule
from codingcode.approval.rules.syntax import Rule as Rule
from codingcode.approval.rules.syntax import RuleAction as RuleAction
from codingcode.approval.rules.syntax import RuleSyntaxError as RuleSyntaxError
from codingcode.approval.rules.syntax import split_rule as split_rule
