"""Every user-facing sentence of the harness, in Chinese and English.

`Text` is the one bilingual string type: manifests use it for titles and diagnoses, and checks
build messages with `say(key, **params)` from the catalogue below. Nothing is translated at run
time; a report picks the language it was asked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

Lang = Literal["zh", "en"]
LANGS: tuple[Lang, ...] = ("zh", "en")


def default_lang(env: Mapping[str, str] | None = None) -> Lang:
    """The language of the locale (LC_ALL, LC_MESSAGES, LANG, LANGUAGE): Chinese for zh*."""
    env = os.environ if env is None else env
    for var in ("LC_ALL", "LC_MESSAGES", "LANG", "LANGUAGE"):
        value = env.get(var, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def lang_of(argv: Sequence[str], env: Mapping[str, str] | None = None) -> Lang:
    """The language a command line asks for (`--lang zh`, `--lang=en`), else the locale's; for
    the one message printed before the command line has been parsed."""
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--lang" and i + 1 < len(argv) else arg.removeprefix("--lang=")
        if arg.startswith("--lang") and value in LANGS:
            return value
    return default_lang(env)


class Text(BaseModel):
    """A sentence in both languages."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    zh: str
    en: str

    def __call__(self, lang: Lang) -> str:
        return getattr(self, lang)

    def format(self, **params) -> Text:
        return Text(zh=self.zh.format(**params), en=self.en.format(**params))

    def __add__(self, other: Text) -> Text:
        return Text(zh=self.zh + other.zh, en=self.en + " " + other.en)

    def lines(self, *others: Text) -> Text:
        """This text and `others`, one per line."""
        parts = (self, *others)
        return Text(zh="\n".join(t.zh for t in parts), en="\n".join(t.en for t in parts))


CATALOG: dict[str, dict[str, str]] = {
    "not_tensor": {
        "zh": "`{name}` 应是 torch.Tensor，实际得到 {got}。",
        "en": "`{name}` should be a torch.Tensor, got {got}.",
    },
    "not_tuple": {
        "zh": "`{name}` 应返回 {count} 个值组成的元组，实际得到 {got}。",
        "en": "`{name}` should return a tuple of {count} values, got {got}.",
    },
    "not_real": {
        "zh": "`{name}` 的 dtype 是 {dtype}，应为实数浮点类型（float32 或 float64）。",
        "en": "`{name}` has dtype {dtype}; expected a real floating-point dtype (float32 or float64).",
    },
    "shape": {
        "zh": "`{name}` 的形状应为 {expected}，实际为 {got}（不会替你广播）。",
        "en": "`{name}` should have shape {expected}, got {got} (outputs are never broadcast).",
    },
    "not_finite": {
        "zh": "`{name}` 含有 NaN 或 inf（{count} 个元素），位置例如 {index}。",
        "en": "`{name}` contains NaN or inf ({count} elements), for example at {index}.",
    },
    "values": {
        "zh": "`{name}` 的数值不对：最大误差 {err:.3g}，位置 {index}：得到 {got:.6g}，应为 {expected:.6g}。",
        "en": "`{name}` has wrong values: largest error {err:.3g} at {index}: got {got:.6g}, expected {expected:.6g}.",
    },
    "values_hidden": {
        "zh": "`{name}` 中有 {count} 个（共 {total} 个）元素不对，例如位置 {index} 的 {got:.4g}。",
        "en": "`{name}` has {count} wrong entries out of {total}, for example {got:.4g} at {index}.",
    },
    "constant_output": {
        "zh": "`{name}` 对不同的输入给出了完全相同的结果：它不依赖输入，所以这项性质无从判断。",
        "en": "`{name}` gives exactly the same result for different inputs: it does not depend on its input, so this property cannot be judged on it.",
    },
    "outputs_order": {
        "zh": "`{name}` 返回的两个输出顺序反了：第一个有 {second} 的形状，第二个有 {first} 的形状。",
        "en": "`{name}` returns its two outputs in the wrong order: the first has the shape of {second}, the second that of {first}.",
    },
    "batch_first": {
        "zh": "`{name}` 的第一维应是批次（{batch}），实际形状为 {shape}，无法比较各个样本。",
        "en": "`{name}` should have the batch ({batch}) as its first dimension; its shape is {shape}, so batch elements cannot be compared.",
    },
    "batch_mixed": {
        "zh": "只改变了批次中第 {changed} 个样本的输入，其他样本的 `{name}` 也变了（最大变化 {err:.3g}）：批次中的样本互相影响了。",
        "en": "Changing only batch element {changed} of the input changed `{name}` of other elements too (by up to {err:.3g}): batch elements affect each other.",
    },
    "student_exception": {
        "zh": "你的代码抛出了异常 {type}: {message}",
        "en": "Your code raised {type}: {message}",
    },
    "exception_where": {
        "zh": "出错的那一行：{where}",
        "en": "It was raised at {where}",
    },
    "exception_call": {
        "zh": "当时的调用：{call}",
        "en": "while running {call}",
    },
    "out_of_memory": {
        "zh": "你的代码内存不够用了：每个沙箱进程在 torch 本身之外最多可用 {budget} MiB，"
        "并且已确认本机能提供这么多；你的代码需要更多。（{detail}）",
        "en": "Your code ran out of memory: a sandboxed worker may use {budget} MiB beyond torch itself, "
        "and this machine was checked to provide that much; your code needed more. ({detail})",
    },
    "grader_memory": {
        "zh": "沙箱在本机上无法提供它承诺的内存（{budget} MiB）。这不是你的问题，请告诉老师。（{detail}）",
        "en": "The sandbox could not provide the memory it promises ({budget} MiB) on this machine: "
        "not your fault; please tell your instructor. ({detail})",
    },
    "sandbox_failed": {
        "zh": "沙箱自身的代码出错了（不是你的问题，请告诉老师）：{detail}",
        "en": "The sandbox's own code failed (not your fault; please tell your instructor): {detail}",
    },
    "not_implemented": {
        "zh": "`{name}` 还没有实现（仍是模板中的占位）。",
        "en": "`{name}` is not implemented yet (still the template's placeholder).",
    },
    "timeout": {
        "zh": "你的代码在 {seconds:g} 秒内没有返回结果（死循环或过慢），已被终止。",
        "en": "Your code did not return within {seconds:g} s (an endless loop, or far too slow) and was stopped.",
    },
    "not_run_timed_out": {
        "zh": "未运行：之前对 `{name}` 的一次调用已经超时（死循环或过慢），不再重复等待。",
        "en": "Not run: an earlier call to `{name}` timed out (an endless loop, or far too slow), so it is not waited for again.",
    },
    "budget_spent_exercise": {
        "zh": "未运行：这道练习的总时间预算（{seconds:g} 秒）已经用完（你的代码太慢或多次等待）。",
        "en": "Not run: this exercise's time budget ({seconds:g} s in all) is spent (your code is too slow, or waits).",
    },
    "budget_spent_submission": {
        "zh": "未运行：整份提交的总时间预算（{seconds:g} 秒）已经用完。",
        "en": "Not run: the time budget of the whole submission ({seconds:g} s) is spent.",
    },
    "crash": {
        "zh": "运行你的代码的进程意外退出（{detail}）。",
        "en": "The process running your code died unexpectedly ({detail}).",
    },
    "protocol": {
        "zh": "你的代码返回了无法接收的数据（{detail}）。",
        "en": "Your code sent back data that could not be accepted ({detail}).",
    },
    "not_code": {
        "zh": "这里需要函数、类或模型对象，但你的代码给出的是数据（{got}）。",
        "en": "Your code gave data ({got}) where a function, a class or a model is due.",
    },
    "missing_file": {
        "zh": "找不到提交文件 {file}：请从 student_template/{file} 复制一份到你的提交文件夹中再完成它。",
        "en": "The submission file {file} was not found: copy student_template/{file} into your submission "
        "folder and fill it in.",
    },
    "bad_file": {
        "zh": "无法读取提交文件 {file}：{problem}。",
        "en": "The submission file {file} cannot be read: {problem}.",
    },
    "syntax_error": {
        "zh": "提交文件 {file} 有语法错误：{message}",
        "en": "The submission file {file} has a syntax error: {message}",
    },
    "load_error": {
        "zh": "导入提交文件 {file} 时出错：{type}: {message}",
        "en": "Loading the submission file {file} failed: {type}: {message}",
    },
    "import_refused": {
        "zh": "提交文件中不允许这个导入：{message}",
        "en": "An import in the submission is not allowed: {message}",
    },
    "sibling_missing": {
        "zh": "{importer} 导入了 {module}，但你的提交中没有文件 {file}；除了你自己提交的文件，只能导入标准库中的常用模块、numpy 和 torch。",
        "en": "{importer} imports {module}, but your submission has no file {file}; besides the files of your submission, only common standard modules, numpy and torch can be imported.",
    },
    "missing_name": {
        "zh": "提交文件中没有定义 `{name}`。",
        "en": "The submission does not define `{name}`.",
    },
    "stale_object": {
        "zh": "之前的检查让运行你的代码的进程重启了，无法继续使用旧对象。",
        "en": "An earlier failure restarted the process running your code, so this object is gone.",
    },
    "grader_error": {
        "zh": "评分程序自身出错（不是你的问题，请告诉老师）：{type}: {message}",
        "en": "The grader itself failed (not your fault; please tell your instructor): {type}: {message}",
    },
    "interrupted": {
        "zh": "已中断（Ctrl-C）：评分已停止，没有写入报告。",
        "en": "Interrupted (Ctrl-C): grading stopped, no report written.",
    },
    "notice_created": {
        "zh": "已根据 student_template/ 创建 {folder}：请在其中完成练习后再次运行 `python grade.py`。",
        "en": "Created {folder} from student_template/: edit the files there, then run `python grade.py` again.",
    },
    "notice_added": {
        "zh": "已从 student_template/ 复制 {files} 到 {folder}：这是新的练习。",
        "en": "Added {files} to {folder} from student_template/: a new exercise to do.",
    },
    "notice_report_written": {"zh": "报告已写入 {path}", "en": "report written to {path}"},
    "notice_html_report": {"zh": "HTML 报告：{path}", "en": "HTML report: {path}"},
    "notice_html_not_written": {
        "zh": "未能写入 HTML 报告 {path}：{problem}",
        "en": "HTML report not written: {path}: {problem}",
    },
    "notice_validating": {"zh": "正在验证 {exercise} …", "en": "validating {exercise} …"},
    "watch_waiting": {
        "zh": "总分 {score}/{max_score} · 正在监视 {folder}：保存文件即重新评分（Ctrl-C 退出）",
        "en": "Total {score}/{max_score} · Watching {folder}: save a file to regrade (Ctrl-C to stop)",
    },
    "watch_needs_watchfiles": {
        "zh": "--watch 需要 watchfiles 包：pip install watchfiles",
        "en": "--watch needs the watchfiles package: pip install watchfiles",
    },
    "watch_format": {
        "zh": "--watch 只输出到终端：不能与 --out、--format 或 --fail-under 同用",
        "en": "--watch reports to the terminal only: it cannot be combined with --out, --format or --fail-under",
    },
    "diagnosis_prefix": {"zh": "诊断：", "en": "Diagnosis:"},
    "see_statement": {"zh": "参见题目中的「{section}」。", "en": "See “{section}” in the statement."},
    "output_cut": {
        "zh": "（输出过长，已截断 {dropped} 字节）",
        "en": "(output too long: {dropped} bytes dropped)",
    },
    # report labels
    "ui_title": {"zh": "自动评分报告", "en": "Grading report"},
    "ui_total": {"zh": "总分", "en": "Total"},
    "ui_seed": {"zh": "随机种子（用 --seed {seed} 复现）", "en": "Seed (reproduce with --seed {seed})"},
    "ui_isolation": {"zh": "沙箱保护", "en": "Sandbox protections"},
    "ui_expected": {"zh": "期望", "en": "expected"},
    "ui_got": {"zh": "你的结果", "en": "yours"},
    "ui_output": {"zh": "你的代码打印的内容", "en": "What your code printed"},
    "ui_traceback": {"zh": "你的代码中的出错位置", "en": "Where your code failed"},
    "ui_hidden_skipped": {
        "zh": "隐藏检查不在学生版中运行，提交后由课程平台评分。",
        "en": "Hidden checks are not run in the student distribution; they run when you submit.",
    },
    "ui_hidden": {"zh": "隐藏", "en": "hidden"},
    "level_full": {
        "zh": "完全隔离（独立用户、无网络、看不到评分文件）",
        "en": "full (own uid, no network, grader files invisible)",
    },
    "level_partial": {
        "zh": "部分隔离（用户命名空间：无网络、看不到评分文件，但与你同一用户）",
        "en": "partial (user namespaces: no network, grader files invisible, but your own uid)",
    },
    "level_minimal": {
        "zh": "最低限度（仅资源限制与超时；只应在容器或虚拟机中使用）",
        "en": "minimal (resource limits and deadlines only; use inside a container or VM)",
    },
    "level_none": {"zh": "未运行学生代码", "en": "no student code ran"},
    "ui_cause": {
        "zh": "同一个错误，{checks} 项检查，扣 {points} 分",
        "en": "one mistake, {checks} checks, −{points} points",
    },
    "ui_see_cause": {"zh": "（原因见上面的 [{diagnosis}]）", "en": "(the mistake [{diagnosis}] above)"},
    "ui_explained_in": {"zh": "题目中的讲解：", "en": "Explained in the statement:"},
    "ui_statements": {"zh": "题目", "en": "Statements"},
    "ui_axes": {"zh": "行：查询 ↓　列：键 →", "en": "rows: queries ↓ · columns: keys →"},
    "ui_check": {"zh": "检查", "en": "check"},
    "ui_points": {"zh": "得分", "en": "points"},
    "ui_status": {"zh": "状态", "en": "status"},
    "status_passed": {"zh": "通过", "en": "passed"},
    "status_failed": {"zh": "未通过", "en": "failed"},
    "status_error": {"zh": "评分程序错误", "en": "grader error"},
    "status_timeout": {"zh": "超时", "en": "timed out"},
    "status_not_implemented": {"zh": "未实现", "en": "not implemented"},
}


def labels(lang: Lang) -> dict[str, str]:
    """Every catalogue sentence in `lang`, unformatted (for templates)."""
    return {key: entry[lang] for key, entry in CATALOG.items()}


def say(key: str, **params) -> Text:
    """The catalogue sentence `key` with `params` filled in, in both languages."""
    entry = CATALOG[key]
    return Text(zh=entry["zh"].format(**params), en=entry["en"].format(**params))
