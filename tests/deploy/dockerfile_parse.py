"""A small Dockerfile reader for the deploy tests (no Docker engine here).

Joins continuation lines, drops comments, resolves `ARG` defaults in `FROM`,
and groups instructions by stage.
"""
import dataclasses
import re


@dataclasses.dataclass
class Instruction:
    keyword: str  # upper case, e.g. RUN
    args: str     # the rest of the (joined) line


@dataclasses.dataclass
class Stage:
    image: str
    name: str
    instructions: list

    def all(self, keyword):
        return [i.args for i in self.instructions if i.keyword == keyword]


def logical_lines(text):
    lines, current = [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if current and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            current += stripped[:-1].strip() + " "
            continue
        current += stripped
        lines.append(current)
        current = ""
    if current:
        lines.append(current.strip())
    return lines


def parse(text):
    """Returns (global_args, stages)."""
    global_args, stages = {}, []
    for line in logical_lines(text):
        keyword, _, args = line.partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "ARG" and not stages:
            name, _, default = args.partition("=")
            global_args[name] = default
            continue
        if keyword == "FROM":
            m = re.fullmatch(r"(?:--platform=\S+\s+)?(\S+)(?:\s+[Aa][Ss]\s+(\S+))?", args)
            assert m, f"cannot read FROM {args!r}"
            image = re.sub(r"\$\{?(\w+)\}?", lambda v: global_args.get(v.group(1), v.group(0)), m.group(1))
            stages.append(Stage(image=image, name=m.group(2) or str(len(stages)), instructions=[]))
            continue
        assert stages, f"instruction before FROM: {line!r}"
        stages[-1].instructions.append(Instruction(keyword, args))
    return global_args, stages


def shell_commands(run_args):
    """Splits a RUN's shell form on `&&` into single commands (whitespace normalised)."""
    return [" ".join(part.split()) for part in run_args.split("&&")]
