"""Every user-facing sentence of the harness, in Chinese and English.

`Text` is the one bilingual string type: manifests use it for titles and diagnoses. `CATALOG`
below is the one catalogue of the harness's own sentences (checks, reports, LMS outputs, the
batch, `validate`), under namespaced keys such as `report.total` or `lms.problem.zip_bad`; code
builds a message with `say(key, **params)` and a template reads `labels(lang)`. Nothing is
translated at run time; a report picks the language it was asked for.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from types import SimpleNamespace
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
    # check: what a check found wrong in a student's result (expect)
    "check.not_tensor": {
        "zh": "`{name}` 应是 torch.Tensor，实际得到 {got}。",
        "en": "`{name}` should be a torch.Tensor, got {got}.",
    },
    "check.not_tuple": {
        "zh": "`{name}` 应返回 {count} 个值组成的元组，实际得到 {got}。",
        "en": "`{name}` should return a tuple of {count} values, got {got}.",
    },
    "check.not_real": {
        "zh": "`{name}` 的 dtype 是 {dtype}，应为实数浮点类型（float32 或 float64）。",
        "en": "`{name}` has dtype {dtype}; expected a real floating-point dtype (float32 or float64).",
    },
    "check.shape": {
        "zh": "`{name}` 的形状应为 {expected}，实际为 {got}（不会替你广播）。",
        "en": "`{name}` should have shape {expected}, got {got} (outputs are never broadcast).",
    },
    "check.not_finite": {
        "zh": "`{name}` 含有 NaN 或 inf（{count} 个元素），位置例如 {index}。",
        "en": "`{name}` contains NaN or inf ({count} elements), for example at {index}.",
    },
    "check.values": {
        "zh": "`{name}` 的数值不对：最大误差 {err:.3g}，位置 {index}：得到 {got:.6g}，应为 {expected:.6g}。",
        "en": "`{name}` has wrong values: largest error {err:.3g} at {index}: got {got:.6g}, expected {expected:.6g}.",
    },
    "check.values_hidden": {
        "zh": "`{name}` 中有 {count} 个（共 {total} 个）元素不对，例如位置 {index} 的 {got:.4g}。",
        "en": "`{name}` has {count} wrong entries out of {total}, for example {got:.4g} at {index}.",
    },
    "check.constant_output": {
        "zh": "`{name}` 对不同的输入给出了完全相同的结果：它不依赖输入，所以这项性质无从判断。",
        "en": "`{name}` gives exactly the same result for different inputs: it does not depend on its input, so this property cannot be judged on it.",
    },
    "check.outputs_order": {
        "zh": "`{name}` 返回的两个输出顺序反了：第一个有 {second} 的形状，第二个有 {first} 的形状。",
        "en": "`{name}` returns its two outputs in the wrong order: the first has the shape of {second}, the second that of {first}.",
    },
    "check.batch_first": {
        "zh": "`{name}` 的第一维应是批次（{batch}），实际形状为 {shape}，无法比较各个样本。",
        "en": "`{name}` should have the batch ({batch}) as its first dimension; its shape is {shape}, so batch elements cannot be compared.",
    },
    "check.batch_mixed": {
        "zh": "只改变了批次中第 {changed} 个样本的输入，其他样本的 `{name}` 也变了（最大变化 {err:.3g}）：批次中的样本互相影响了。",
        "en": "Changing only batch element {changed} of the input changed `{name}` of other elements too (by up to {err:.3g}): batch elements affect each other.",
    },
    "check.not_implemented": {
        "zh": "`{name}` 还没有实现（仍是模板中的占位）。",
        "en": "`{name}` is not implemented yet (still the template's placeholder).",
    },
    "check.not_code": {
        "zh": "这里需要函数、类或模型对象，但你的代码给出的是数据（{got}）。",
        "en": "Your code gave data ({got}) where a function, a class or a model is due.",
    },
    # run: running the student's code: exceptions, deadlines, budgets, crashes
    "run.student_exception": {
        "zh": "你的代码抛出了异常 {type}: {message}",
        "en": "Your code raised {type}: {message}",
    },
    "run.exception_where": {
        "zh": "出错的那一行：{where}",
        "en": "It was raised at {where}",
    },
    "run.exception_call": {
        "zh": "当时的调用：{call}",
        "en": "while running {call}",
    },
    # run.operands: the operands' sizes a torch shape error gives (core/operands.py)
    "run.operands.matrix": {
        "zh": "torch 把这个乘积看成 ({a}×{b}) 乘 ({c}×{d})（左边的前导维并入了行）：左边操作数的最后一维 {b} 应等于右边操作数的第一维 {c}。左右两个之中有一个形状不对：少了或多了一次转置，或者用错了张量。（对 nn.Linear 或 F.linear，右边是它的权重转置后的 (in_features×out_features)。）",
        "en": "torch saw this product as ({a}×{b}) times ({c}×{d}) (the left operand's leading axes folded into its rows): the left operand's last size, {b}, must equal the right operand's first, {c}. One of the two has the wrong shape: a transpose missing or one too many, or the wrong tensor. (For nn.Linear or F.linear, the right one is its weight transposed, in_features×out_features.)",
    },
    "run.operands.batched_inner": {
        "zh": "这是一个批量矩阵乘法：右边操作数的倒数第二维应等于左边操作数的最后一维 {want}，实际是 {got}。多半是右边少了（或多了）一次 transpose(-2, -1)，或者右边用错了张量。",
        "en": "In this batched matrix product the right operand's second-to-last size should equal the left operand's last size, {want}, and it is {got}: most likely a transpose(-2, -1) missing (or one too many) on the right, or the wrong tensor there.",
    },
    "run.operands.batched_batch": {
        "zh": "这是一个批量矩阵乘法：两边的批次大小（最后两维之前所有维的乘积）不同，左边 {want}，右边 {got}。某一边的批次维被换走或丢掉了（例如对三维张量用了 .T）。",
        "en": "In this batched matrix product the two operands' batch sizes (all axes before the last two, multiplied) differ: {want} on the left, {got} on the right. One side's batch axes were moved or lost (a .T on a 3-D tensor, say).",
    },
    "run.operands.broadcast": {
        "zh": "两个操作数在 torch 对齐的第 {dim} 维（从 0 数；矩阵乘法时只数批次维）上大小不同：左边（第一个）是 {a}，右边（第二个）是 {b}；同一维的大小必须相等，或其中一个为 1。",
        "en": "The two operands differ along axis {dim} of the shapes torch lined up (from 0; for a matrix product, of the batch axes): {a} for the first (left) one, {b} for the second (right). Sizes along one axis must be equal, or one of them 1.",
    },
    "run.operands.view": {
        "zh": "view/reshape 要的形状 [{shape}] 需要 {need} 个元素，而这个张量有 {size} 个：要的各维之积必须等于 {size}。被重塑的张量和你以为的形状不一样，或者要的形状里有一维写错了。",
        "en": "view/reshape asked for shape [{shape}], which holds {need} elements, and the tensor has {size}: the sizes asked for must multiply to {size}. Either the tensor reshaped is not the shape you think, or one size in the new shape is wrong.",
    },
    "run.operands.view_free": {
        "zh": "view/reshape 要的形状 [{shape}] 中除 -1 以外各维之积是 {known}，它不能整除这个张量的元素个数 {size}：被重塑的张量和你以为的形状不一样，或者要的形状里有一维写错了。",
        "en": "In the shape view/reshape asked for, [{shape}], the sizes other than -1 multiply to {known}, which does not divide the tensor's {size} elements: either the tensor reshaped is not the shape you think, or one size in the new shape is wrong.",
    },
    "run.operands.einsum": {
        "zh": "einsum 的下标 {letter} 在第 {operand} 个操作数（从 0 数）上是 {got}，在前面的操作数上是 {want}：同一个下标在每个操作数上的大小必须相同。",
        "en": "einsum's index {letter} has size {got} in operand {operand} (counting from 0) and {want} in an earlier one: one index must have the same size in every operand.",
    },
    "run.out_of_memory": {
        "zh": "你的代码内存不够用了：每个沙箱进程在 torch 本身之外最多可用 {budget} MiB，并且已确认本机能提供这么多；你的代码需要更多。（{detail}）",
        "en": "Your code ran out of memory: a sandboxed worker may use {budget} MiB beyond torch itself, and this machine was checked to provide that much; your code needed more. ({detail})",
    },
    "run.grader_memory": {
        "zh": "沙箱在本机上无法提供它承诺的内存（{budget} MiB）。这不是你的问题，请告诉老师。（{detail}）",
        "en": "The sandbox could not provide the memory it promises ({budget} MiB) on this machine: not your fault; please tell your instructor. ({detail})",
    },
    "run.sandbox_failed": {
        "zh": "沙箱自身的代码出错了（不是你的问题，请告诉老师）：{detail}",
        "en": "The sandbox's own code failed (not your fault; please tell your instructor): {detail}",
    },
    "run.timeout": {
        "zh": "你的代码在 {seconds:g} 秒内没有返回结果（死循环或过慢），已被终止。",
        "en": "Your code did not return within {seconds:g} s (an endless loop, or far too slow) and was stopped.",
    },
    "run.not_run_timed_out": {
        "zh": "未运行：之前对 `{name}` 的一次调用已经超时（死循环或过慢），不再重复等待。",
        "en": "Not run: an earlier call to `{name}` timed out (an endless loop, or far too slow), so it is not waited for again.",
    },
    "run.budget_spent_exercise": {
        "zh": "未运行：这道练习的总时间预算（{seconds:g} 秒）已经用完（你的代码太慢或多次等待）。",
        "en": "Not run: this exercise's time budget ({seconds:g} s in all) is spent (your code is too slow, or waits).",
    },
    "run.budget_spent_submission": {
        "zh": "未运行：整份提交的总时间预算（{seconds:g} 秒）已经用完。",
        "en": "Not run: the time budget of the whole submission ({seconds:g} s) is spent.",
    },
    "run.crash": {
        "zh": "运行你的代码的进程意外退出（{detail}）。",
        "en": "The process running your code died unexpectedly ({detail}).",
    },
    "run.protocol": {
        "zh": "你的代码返回了无法接收的数据（{detail}）。",
        "en": "Your code sent back data that could not be accepted ({detail}).",
    },
    "run.stale_object": {
        "zh": "之前的检查让运行你的代码的进程重启了，无法继续使用旧对象。",
        "en": "An earlier failure restarted the process running your code, so this object is gone.",
    },
    "run.grader_error": {
        "zh": "评分程序自身出错（不是你的问题，请告诉老师）：{type}: {message}",
        "en": "The grader itself failed (not your fault; please tell your instructor): {type}: {message}",
    },
    # submission: reading the submission's files and notebooks
    "submission.missing_file": {
        "zh": "找不到提交文件 {file}：请从 student_template/{file} 复制一份到你的提交文件夹中再完成它。",
        "en": "The submission file {file} was not found: copy student_template/{file} into your submission folder and fill it in.",
    },
    "submission.bad_file": {
        "zh": "无法读取提交文件 {file}：{problem}。",
        "en": "The submission file {file} cannot be read: {problem}.",
    },
    "submission.syntax_error": {
        "zh": "提交文件 {file} 有语法错误：{message}",
        "en": "The submission file {file} has a syntax error: {message}",
    },
    "submission.load_error": {
        "zh": "导入提交文件 {file} 时出错：{type}: {message}",
        "en": "Loading the submission file {file} failed: {type}: {message}",
    },
    "submission.import_refused": {
        "zh": "提交文件中不允许这个导入：{message}",
        "en": "An import in the submission is not allowed: {message}",
    },
    "submission.sibling_missing": {
        "zh": "{importer} 导入了 {module}，但你的提交中没有文件 {file}；除了你自己提交的文件，只能导入标准库中的常用模块、numpy 和 torch。",
        "en": "{importer} imports {module}, but your submission has no file {file}; besides the files of your submission, only common standard modules, numpy and torch can be imported.",
    },
    "submission.siblings_too_large": {
        "zh": "{file} 连同它导入的你自己的文件至少有 {size} KiB，超过了一个练习的代码上限 {cap} KiB（一份解答通常只有几 KiB）：请删掉用不到的代码。",
        "en": "{file}, with the files of yours it imports, comes to at least {size} KiB, more than the {cap} KiB one exercise's code may have (a solution is a few KiB): remove the code it does not need.",
    },
    "submission.missing_name": {
        "zh": "提交文件中没有定义 `{name}`。",
        "en": "The submission does not define `{name}`.",
    },
    "submission.notebook.not_json": {
        "zh": "笔记本 {file} 不是有效的 JSON（{detail}），无法读取其中的代码。",
        "en": "The notebook {file} is not valid JSON ({detail}); its code cannot be read.",
    },
    "submission.notebook.not_notebook": {
        "zh": "{file} 不是 Jupyter 笔记本：{detail}。",
        "en": "{file} is not a Jupyter notebook: {detail}.",
    },
    "submission.notebook.too_large": {
        "zh": "笔记本 {file} 太大（超过 {cap} 字节）。请清除输出（Kernel → Restart & Clear Output）后再提交。",
        "en": "The notebook {file} is too large (over {cap} bytes). Clear its outputs (Kernel → Restart & Clear Output) and submit it again.",
    },
    "submission.notebook.code_too_large": {
        "zh": "笔记本 {file} 中练习 {exercise} 的代码超过 {cap} 字节。",
        "en": "The code of exercise {exercise} in the notebook {file} is over {cap} bytes.",
    },
    "submission.notebook.no_tagged_cell": {
        "zh": '笔记本 {file} 中没有标记为 {exercise} 的代码单元格：请把这道练习的代码单元格加上标签 {exercise}（单元格元数据中的 "tags"；在 Jupyter 中：View → Cell Toolbar → Tags）。',
        "en": 'The notebook {file} has no code cell tagged {exercise}: tag the code cells of this exercise with {exercise} (the cell metadata\'s "tags"; in Jupyter: View → Cell Toolbar → Tags).',
    },
    "submission.notebook.no_code": {
        "zh": "笔记本 {file} 中没有可评分的代码单元格。",
        "en": "The notebook {file} has no code cell to grade.",
    },
    "submission.notebook.ambiguous": {
        "zh": "练习 {exercise} 的单元格同时出现在笔记本 {files} 中：只保留一个笔记本里的标签。",
        "en": "Cells tagged {exercise} are in more than one notebook ({files}): keep the tag in one notebook only.",
    },
    "submission.notebook.no_nbformat": {
        "zh": "无法读取笔记本 {file}：评分程序缺少 nbformat 包（pip install nbformat）。这不是你的问题。",
        "en": "The notebook {file} cannot be read: the grader lacks the nbformat package (pip install nbformat). Not your fault.",
    },
    # cli: notices of `grade.py` on stderr
    "cli.interrupted": {
        "zh": "已中断（Ctrl-C）：评分已停止，没有写入报告。",
        "en": "Interrupted (Ctrl-C): grading stopped, no report written.",
    },
    "cli.created": {
        "zh": "已根据 student_template/ 创建 {folder}：请在其中完成练习后再次运行 `python grade.py`。",
        "en": "Created {folder} from student_template/: edit the files there, then run `python grade.py` again.",
    },
    "cli.added": {
        "zh": "已从 student_template/ 复制 {files} 到 {folder}：这是新的练习。",
        "en": "Added {files} to {folder} from student_template/: a new exercise to do.",
    },
    "cli.report_written": {
        "zh": "报告已写入 {path}",
        "en": "report written to {path}",
    },
    "cli.html_report": {
        "zh": "HTML 报告：{path}",
        "en": "HTML report: {path}",
    },
    "cli.html_not_written": {
        "zh": "未能写入 HTML 报告 {path}：{problem}",
        "en": "HTML report not written: {path}: {problem}",
    },
    # watch: `grade.py --watch`
    "watch.waiting": {
        "zh": "总分 {score}/{max_score} · 正在监视 {folder}：保存文件即重新评分（Ctrl-C 退出）",
        "en": "Total {score}/{max_score} · Watching {folder}: save a file to regrade (Ctrl-C to stop)",
    },
    "watch.needs_watchfiles": {
        "zh": "--watch 需要 watchfiles 包：pip install watchfiles",
        "en": "--watch needs the watchfiles package: pip install watchfiles",
    },
    "watch.format": {
        "zh": "--watch 只输出到终端：不能与 --out、--format 或 --fail-under 同用",
        "en": "--watch reports to the terminal only: it cannot be combined with --out, --format or --fail-under",
    },
    # report: the single-submission report's labels (text, HTML, Markdown)
    "report.diagnosis_prefix": {
        "zh": "诊断：",
        "en": "Diagnosis:",
    },
    "report.see_statement": {
        "zh": "参见题目中的「{section}」。",
        "en": "See “{section}” in the statement.",
    },
    "report.output_cut": {
        "zh": "（输出过长，已截断 {dropped} 字节）",
        "en": "(output too long: {dropped} bytes dropped)",
    },
    "report.title": {
        "zh": "自动评分报告",
        "en": "Grading report",
    },
    "report.total": {
        "zh": "总分",
        "en": "Total",
    },
    "report.seed": {
        "zh": "随机种子（用 --seed {seed} 复现）",
        "en": "Seed (reproduce with --seed {seed})",
    },
    "report.isolation": {
        "zh": "沙箱保护",
        "en": "Sandbox protections",
    },
    "report.expected": {
        "zh": "期望",
        "en": "expected",
    },
    "report.got": {
        "zh": "你的结果",
        "en": "yours",
    },
    "report.output": {
        "zh": "你的代码打印的内容",
        "en": "What your code printed",
    },
    "report.traceback": {
        "zh": "你的代码中的出错位置",
        "en": "Where your code failed",
    },
    "report.hidden_skipped": {
        "zh": "隐藏检查不在学生版中运行，提交后由课程平台评分。",
        "en": "Hidden checks are not run in the student distribution; they run when you submit.",
    },
    "report.hidden": {
        "zh": "隐藏",
        "en": "hidden",
    },
    "report.level.full": {
        "zh": "完全隔离（独立用户、无网络、看不到评分文件）",
        "en": "full (own uid, no network, grader files invisible)",
    },
    "report.level.partial": {
        "zh": "部分隔离（用户命名空间：无网络、看不到评分文件，但与你同一用户）",
        "en": "partial (user namespaces: no network, grader files invisible, but your own uid)",
    },
    "report.level.minimal": {
        "zh": "最低限度（仅资源限制与超时；只应在容器或虚拟机中使用）",
        "en": "minimal (resource limits and deadlines only; use inside a container or VM)",
    },
    "report.level.none": {
        "zh": "未运行学生代码",
        "en": "no student code ran",
    },
    "report.cause": {
        "zh": "同一个错误，{checks} 项检查，扣 {points} 分",
        "en": "one mistake, {checks} checks, −{points} points",
    },
    "report.see_cause": {
        "zh": "（原因见上面的 [{diagnosis}]）",
        "en": "(the mistake [{diagnosis}] above)",
    },
    "report.explained_in": {
        "zh": "题目中的讲解：",
        "en": "Explained in the statement:",
    },
    "report.statements": {
        "zh": "题目",
        "en": "Statements",
    },
    "report.axes": {
        "zh": "行：查询 ↓　列：键 →",
        "en": "rows: queries ↓ · columns: keys →",
    },
    "report.column.check": {
        "zh": "检查",
        "en": "check",
    },
    "report.column.points": {
        "zh": "得分",
        "en": "points",
    },
    "report.column.status": {
        "zh": "状态",
        "en": "status",
    },
    "report.status.passed": {
        "zh": "通过",
        "en": "passed",
    },
    "report.status.failed": {
        "zh": "未通过",
        "en": "failed",
    },
    "report.status.error": {
        "zh": "评分程序错误",
        "en": "grader error",
    },
    "report.status.timeout": {
        "zh": "超时",
        "en": "timed out",
    },
    "report.status.not_implemented": {
        "zh": "未实现",
        "en": "not implemented",
    },
    # lms: LMS outputs; `lms.problem.<id>` says why a submission has no score (gradebook `reason`)
    "lms.problem.zip_bad": {
        "zh": "{source} 不是有效的 zip 文件：{detail}",
        "en": "{source} is not a valid zip file: {detail}",
    },
    "lms.problem.zip_traversal": {
        "zh": "{source} 中的条目 {member!r} 指向压缩包之外（含 ..），已拒绝。",
        "en": "{source}: the entry {member!r} points outside the archive (it contains ..); refused.",
    },
    "lms.problem.zip_absolute": {
        "zh": "{source} 中的条目 {member!r} 是绝对路径，已拒绝。",
        "en": "{source}: the entry {member!r} is an absolute path; refused.",
    },
    "lms.problem.zip_link": {
        "zh": "{source} 中的条目 {member!r} 是链接（符号链接），已拒绝。",
        "en": "{source}: the entry {member!r} is a link (symbolic link); refused.",
    },
    "lms.problem.zip_encrypted": {
        "zh": "{source} 中的条目 {member!r} 被加密，无法读取。",
        "en": "{source}: the entry {member!r} is encrypted and cannot be read.",
    },
    "lms.problem.zip_too_many": {
        "zh": "{source} 含有 {count} 个条目，超过上限 {cap}（疑似压缩炸弹）。",
        "en": "{source} holds {count} entries, over the cap of {cap} (a zip bomb?).",
    },
    "lms.problem.zip_too_large": {
        "zh": "{source} 解压后超过 {cap} 字节（条目 {member!r}），疑似压缩炸弹，已拒绝。",
        "en": "{source} unpacks to more than {cap} bytes (at entry {member!r}): a zip bomb? Refused.",
    },
    "lms.problem.zip_directory_too_large": {
        "zh": "{source} 的中央目录有 {size} 字节，超过上限 {cap}（疑似压缩炸弹），未解析即拒绝。",
        "en": "{source}: its central directory is {size} bytes, over the cap of {cap} (a zip bomb?); refused before parsing it.",
    },
    "lms.problem.zip_file_too_large": {
        "zh": "{source} 本身有 {size} 字节，超过上限 {cap}。",
        "en": "{source} is {size} bytes, over the cap of {cap}.",
    },
    "lms.problem.too_deep": {
        "zh": "{source} 中的文件夹嵌套超过 {cap} 层（{where}），已拒绝。",
        "en": "{source}: its folders are nested more than {cap} levels deep ({where}); refused.",
    },
    "lms.problem.too_large_to_send": {
        "zh": "{source} 超过 {cap} 字节或 {members} 个文件，无法发送给评分节点。",
        "en": "{source} is over {cap} bytes or {members} files: too large to send to a grading worker.",
    },
    "lms.problem.not_submission": {
        "zh": "{source} 既不是文件夹也不是 .zip 文件（每位学生应有一个文件夹或一个 .zip）。",
        "en": "{source} is neither a folder nor a .zip file (one folder or one .zip per student).",
    },
    "lms.problem.link_entry": {
        "zh": "{source} 是符号链接，已拒绝（请放入真实的文件夹或 .zip）。",
        "en": "{source} is a symbolic link; refused (put the real folder or .zip there).",
    },
    "lms.problem.no_files": {
        "zh": "提交中没有任何练习文件（应有：{expected}）。",
        "en": "The submission holds none of the exercise files (expected: {expected}).",
    },
    "lms.problem.job_died": {
        "zh": "评分进程在评这份提交时意外退出（{detail}）；评分程序的问题，不是学生的问题。",
        "en": "The grading process died while grading this submission ({detail}); a grader problem, not the student's.",
    },
    "lms.problem.job_timeout": {
        "zh": "评这份提交用时超过 {seconds:g} 秒，已终止（超过每份提交的总时限）。",
        "en": "Grading this submission took longer than {seconds:g} s and was stopped (the per-submission limit).",
    },
    "lms.problem.grader_failed": {
        "zh": "评分程序出错（不是学生的问题）：{detail}",
        "en": "The grader failed (not the student's fault): {detail}",
    },
    "lms.summary": {
        "zh": "得分 {score:g} / {max_score:g}（随机种子 {seed}）。",
        "en": "Score {score:g} / {max_score:g} (seed {seed}).",
    },
    "lms.ungradable": {
        "zh": "无法评分：{reason}",
        "en": "Could not be graded: {reason}",
    },
    "lms.printed": {
        "zh": "你的代码在 {exercise} 中打印的内容：",
        "en": "What your code printed in {exercise}:",
    },
    # batch: the batch's log on stderr
    "batch.done": {
        "zh": "完成：本次评了 {graded} 份，此前已完成 {kept} 份，共 {total} 份；用时 {seconds:.1f} 秒（{rate:.1f} 份/秒）。",
        "en": "Done: graded {graded} now, {kept} kept from before, {total} in all; {seconds:.1f} s ({rate:.1f} per second).",
    },
    "batch.interrupted": {
        "zh": "已中断：{done} / {total} 份已完成并保存；再次运行同一命令即可继续。",
        "en": "Interrupted: {done} of {total} finished and saved; run the same command again to resume.",
    },
    "batch.outputs": {
        "zh": "成绩册：{gradebook}；班级报告：{report}",
        "en": "Gradebook: {gradebook}; class report: {report}",
    },
    # class_report: the class report
    "class_report.title": {
        "zh": "全班评分分析",
        "en": "Class grading report",
    },
    "class_report.submissions": {
        "zh": "提交数",
        "en": "Submissions",
    },
    "class_report.graded": {
        "zh": "已评分",
        "en": "graded",
    },
    "class_report.refused": {
        "zh": "被拒绝",
        "en": "refused",
    },
    "class_report.error": {
        "zh": "评分出错",
        "en": "grader errors",
    },
    "class_report.seed": {
        "zh": "本批次随机种子",
        "en": "Batch seed",
    },
    "class_report.distribution": {
        "zh": "总分分布（仅已评分的提交）",
        "en": "Score distribution (graded submissions only)",
    },
    "class_report.mean": {
        "zh": "平均分",
        "en": "mean",
    },
    "class_report.median": {
        "zh": "中位数",
        "en": "median",
    },
    "class_report.stdev": {
        "zh": "标准差",
        "en": "std. dev.",
    },
    "class_report.exercises": {
        "zh": "各练习平均分",
        "en": "Mean score per exercise",
    },
    "class_report.exercise": {
        "zh": "练习",
        "en": "Exercise",
    },
    "class_report.full_marks": {
        "zh": "满分人数",
        "en": "full marks",
    },
    "class_report.checks": {
        "zh": "各检查项通过率与最常见的诊断",
        "en": "Pass rate and most frequent diagnoses per check",
    },
    "class_report.check": {
        "zh": "检查项",
        "en": "Check",
    },
    "class_report.pass_rate": {
        "zh": "通过率",
        "en": "pass rate",
    },
    "class_report.diagnoses": {
        "zh": "最常见的诊断",
        "en": "most frequent diagnoses",
    },
    "class_report.misconceptions": {
        "zh": "全班共有的错误（按学生人数）",
        "en": "Misconceptions shared by the class (by students)",
    },
    "class_report.students": {
        "zh": "学生数",
        "en": "students",
    },
    "class_report.diagnosis": {
        "zh": "诊断出的错误",
        "en": "diagnosed mistake",
    },
    "class_report.more": {
        "zh": "另有 {count} 种错误，见 analytics.json。",
        "en": "{count} more in analytics.json.",
    },
    "class_report.none": {
        "zh": "无",
        "en": "none",
    },
    "class_report.problems": {
        "zh": "未能完整评分的提交（被拒绝、出错，或有练习无法加载、崩溃、超时）",
        "en": "Submissions not fully graded (refused, failed, or an exercise that did not load, crashed or timed out)",
    },
    "class_report.student": {
        "zh": "学生",
        "en": "Student",
    },
    "class_report.reason": {
        "zh": "原因",
        "en": "Reason",
    },
    # similarity: the code similarity report
    "similarity.title": {
        "zh": "代码相似度",
        "en": "Code similarity",
    },
    "similarity.intro": {
        "zh": "每道练习中两两比较所有提交（copydetect：规范化后的词法单元的指纹，MOSS 的方法；发下去的模板代码不计入）。下面列出任一方有至少 {threshold}% 的代码与对方重合的配对。相似不等于抄袭：请打开对照页自己判断。",
        "en": "Every pair of submissions compared per exercise (copydetect: fingerprints of normalised tokens, MOSS's method; the starter code handed out does not count). Listed: the pairs where at least {threshold}% of either side's code is shared with the other. Similar is not copied: open the side-by-side view and judge.",
    },
    "similarity.pair": {
        "zh": "配对",
        "en": "Pair",
    },
    "similarity.overlap": {
        "zh": "重合比例",
        "en": "Overlap",
    },
    "similarity.view": {
        "zh": "对照查看",
        "en": "side by side",
    },
    "similarity.none": {
        "zh": "没有超过阈值的配对。",
        "en": "No pair above the threshold.",
    },
    "similarity.compared": {
        "zh": "比较的提交数",
        "en": "submissions compared",
    },
    "similarity.shared": {
        "zh": "重合部分已高亮。",
        "en": "Shared code is highlighted.",
    },
    # validate: `grade.py validate`
    "validate.progress": {
        "zh": "正在验证 {exercise} …",
        "en": "validating {exercise} …",
    },
    "validate.missing": {
        "zh": "{file}：文件不存在",
        "en": "{file}: file is missing",
    },
    "validate.empty": {
        "zh": "{file}：文件是空的",
        "en": "{file}: file is empty",
    },
    "validate.syntax": {
        "zh": "{file}:{line}：语法错误：{msg}",
        "en": "{file}:{line}: syntax error: {msg}",
    },
    "validate.marker": {
        "zh": "{file}:{line}：脚手架占位符 {marker} 还没有替换",
        "en": "{file}:{line}: the scaffold placeholder {marker} is still there",
    },
    "validate.example_check": {
        "zh": "{file}：仍声明了脚手架的示例检查 {check!r}",
        "en": "{file}: the scaffold's example check {check!r} is still declared",
    },
    "validate.export_missing": {
        "zh": "{file}：没有在模块顶层定义 exports 中的 {name!r}",
        "en": "{file}: does not define {name!r} at module level (listed in exports)",
    },
    "validate.export_unlisted": {
        "zh": "{file}：使用了 student.{name}，但 {name!r} 不在 exports 中",
        "en": "{file}: uses student.{name} but {name!r} is not in exports",
    },
    "validate.check_missing": {
        "zh": "检查 {check!r}：{file} 中没有 @check 测试实现它",
        "en": "check {check!r}: no @check test in {file} implements it",
    },
    "validate.check_twice": {
        "zh": "检查 {check!r}：被多个测试实现：{tests}",
        "en": "check {check!r}: implemented by several tests: {tests}",
    },
    "validate.check_unknown": {
        "zh": "{file}：{test} 标记为 @check({check!r})，但清单中没有这个检查",
        "en": "{file}: {test} is marked @check({check!r}) but the manifest declares no such check",
    },
    "validate.test_unmarked": {
        "zh": "{file}：{test} 没有 @check(id) 标记",
        "en": "{file}: {test} has no @check(id) marker",
    },
    "validate.visible_reference": {
        "zh": "{file}：公开检查 {check!r}（{test}）使用了 `reference`，学生版中没有它",
        "en": "{file}: visible check {check!r} ({test}) uses `reference`, absent from the student build",
    },
    "validate.text_empty": {
        "zh": "{where}：{lang} 文本为空",
        "en": "{where}: the {lang} text is empty",
    },
    "validate.text_params": {
        "zh": "{where}：zh 与 en 的占位符不同（zh {zh}，en {en}）",
        "en": "{where}: zh and en use different placeholders (zh {zh}, en {en})",
    },
    "validate.zh_not_chinese": {
        "zh": "{where}：zh 文本中没有中文",
        "en": "{where}: the zh text has no Chinese character",
    },
    "validate.section_unmatched": {
        "zh": "诊断 {diagnosis!r}：section「{section}」不是 {file} 中的标题",
        "en": "diagnosis {diagnosis!r}: section “{section}” is not a heading of {file}",
    },
    "validate.reference_fails": {
        "zh": "参考答案（seed {seed}）：检查 {check!r} {status}：{message}",
        "en": "reference (seed {seed}): check {check!r} {status}: {message}",
    },
    "validate.stub_passes": {
        "zh": "模板：检查 {check!r} 通过了（未修改的模板必须在每项检查上得 0 分）",
        "en": "stub: check {check!r} passed (the untouched stub must score zero on every check)",
    },
    "validate.stub_error": {
        "zh": "模板：检查 {check!r} 评分程序出错：{message}",
        "en": "stub: check {check!r}: grader error: {message}",
    },
    "validate.mutant": {
        "zh": "变异体 {name}：{problem}",
        "en": "mutant {name}: {problem}",
    },
    "validate.mutant_unknown_diagnosis": {
        "zh": "变异体 {name}：期望的诊断 {diagnosis!r} 未在清单中声明",
        "en": "mutant {name}: expects diagnosis {diagnosis!r}, which the manifest does not declare",
    },
    "validate.diagnosis_unexercised": {
        "zh": "诊断 {diagnosis!r}：{folder} 中没有任何变异体得到它（请添加变异体或删除该诊断）",
        "en": "diagnosis {diagnosis!r}: no mutant in {folder} gets it (add a mutant or drop the diagnosis)",
    },
    "validate.diagnoses_no_mutants": {
        "zh": "{folder} 中没有变异体，所以这些诊断都没有被验证：{diagnoses}",
        "en": "no mutants in {folder}, so no declared diagnosis is proven: {diagnoses}",
    },
    "validate.no_mutants": {
        "zh": "{folder} 中没有变异体",
        "en": "no mutants in {folder}",
    },
    "validate.seed_dependent": {
        "zh": "{what}：不同的随机种子给出不同的结果：{differences}",
        "en": "{what}: the result depends on the seed: {differences}",
    },
    "validate.grading_crashed": {
        "zh": "{what}：评分过程崩溃：{type}: {message}",
        "en": "{what}: grading crashed: {type}: {message}",
    },
    "validate.column.exercise": {
        "zh": "练习",
        "en": "exercise",
    },
    "validate.column.reference": {
        "zh": "参考答案",
        "en": "reference",
    },
    "validate.column.stub": {
        "zh": "模板",
        "en": "stub",
    },
    "validate.column.caught": {
        "zh": "变异体被抓到",
        "en": "mutants caught",
    },
    "validate.column.named": {
        "zh": "变异体被正确命名",
        "en": "mutants named",
    },
    "validate.column.worst": {
        "zh": "单个错误最多扣分",
        "en": "worst single mistake",
    },
    "validate.total": {
        "zh": "合计：{count} 个练习，{failed} 个不合格；变异体被抓到 {caught}/{total}（{caught_pct}），被正确命名 {named}/{total}（{named_pct}）",
        "en": "total: {count} exercises, {failed} failing; mutants caught {caught}/{total} ({caught_pct}), named {named}/{total} ({named_pct})",
    },
}
"""Every user-facing sentence, keyed `namespace.name` (namespaces nest: `report.status.passed`)."""


def say(key: str, **params) -> Text:
    """The catalogue sentence `key` with `params` filled in, in both languages."""
    entry = CATALOG[key]
    return Text(zh=entry["zh"].format(**params), en=entry["en"].format(**params))


class Labels(SimpleNamespace):
    """The catalogue in one language as nested attributes, for templates: `t.report.total`,
    `t.report.status[k.status]` (Jinja falls back to attributes when an item is not found)."""


@functools.cache
def labels(lang: Lang) -> Labels:
    """Every catalogue sentence in `lang`, unformatted, by namespace (for templates)."""
    root: dict = {}
    for key, entry in CATALOG.items():
        *spaces, name = key.split(".")
        node = root
        for space in spaces:
            node = node.setdefault(space, {})
        node[name] = entry[lang]

    def build(node: dict) -> Labels:
        return Labels(**{k: build(v) if isinstance(v, dict) else v for k, v in node.items()})

    return build(root)
