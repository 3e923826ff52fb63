"""Every sentence the LMS pipeline shows (gradebook reasons, batch log, class report), in zh and en.

Kept beside the pipeline rather than in `i18n.CATALOG` because only this package uses them; the
type is the harness's one bilingual `Text`, so a report picks its language the same way.
"""

from __future__ import annotations

from ..i18n import Lang, Text

MESSAGES: dict[str, Text] = {
    # why a submission has no score (gradebook `reason`, LMS outputs)
    "zip_bad": Text(
        zh="{source} 不是有效的 zip 文件：{detail}", en="{source} is not a valid zip file: {detail}"
    ),
    "zip_traversal": Text(
        zh="{source} 中的条目 {member!r} 指向压缩包之外（含 ..），已拒绝。",
        en="{source}: the entry {member!r} points outside the archive (it contains ..); refused.",
    ),
    "zip_absolute": Text(
        zh="{source} 中的条目 {member!r} 是绝对路径，已拒绝。",
        en="{source}: the entry {member!r} is an absolute path; refused.",
    ),
    "zip_link": Text(
        zh="{source} 中的条目 {member!r} 是链接（符号链接），已拒绝。",
        en="{source}: the entry {member!r} is a link (symbolic link); refused.",
    ),
    "zip_encrypted": Text(
        zh="{source} 中的条目 {member!r} 被加密，无法读取。",
        en="{source}: the entry {member!r} is encrypted and cannot be read.",
    ),
    "zip_too_many": Text(
        zh="{source} 含有 {count} 个条目，超过上限 {cap}（疑似压缩炸弹）。",
        en="{source} holds {count} entries, over the cap of {cap} (a zip bomb?).",
    ),
    "zip_too_large": Text(
        zh="{source} 解压后超过 {cap} 字节（条目 {member!r}），疑似压缩炸弹，已拒绝。",
        en="{source} unpacks to more than {cap} bytes (at entry {member!r}): a zip bomb? Refused.",
    ),
    "zip_directory_too_large": Text(
        zh="{source} 的中央目录有 {size} 字节，超过上限 {cap}（疑似压缩炸弹），未解析即拒绝。",
        en="{source}: its central directory is {size} bytes, over the cap of {cap} (a zip bomb?); "
        "refused before parsing it.",
    ),
    "zip_file_too_large": Text(
        zh="{source} 本身有 {size} 字节，超过上限 {cap}。",
        en="{source} is {size} bytes, over the cap of {cap}.",
    ),
    "too_large_to_send": Text(
        zh="{source} 超过 {cap} 字节或 {members} 个文件，无法发送给评分节点。",
        en="{source} is over {cap} bytes or {members} files: too large to send to a grading worker.",
    ),
    "not_submission": Text(
        zh="{source} 既不是文件夹也不是 .zip 文件（每位学生应有一个文件夹或一个 .zip）。",
        en="{source} is neither a folder nor a .zip file (one folder or one .zip per student).",
    ),
    "link_entry": Text(
        zh="{source} 是符号链接，已拒绝（请放入真实的文件夹或 .zip）。",
        en="{source} is a symbolic link; refused (put the real folder or .zip there).",
    ),
    "no_files": Text(
        zh="提交中没有任何练习文件（应有：{expected}）。",
        en="The submission holds none of the exercise files (expected: {expected}).",
    ),
    "job_died": Text(
        zh="评分进程在评这份提交时意外退出（{detail}）；评分程序的问题，不是学生的问题。",
        en="The grading process died while grading this submission ({detail}); "
        "a grader problem, not the student's.",
    ),
    "job_timeout": Text(
        zh="评这份提交用时超过 {seconds:g} 秒，已终止（超过每份提交的总时限）。",
        en="Grading this submission took longer than {seconds:g} s and was stopped "
        "(the per-submission limit).",
    ),
    "grader_failed": Text(
        zh="评分程序出错（不是学生的问题）：{detail}",
        en="The grader failed (not the student's fault): {detail}",
    ),
    # summaries shown in LMS outputs
    "summary": Text(
        zh="得分 {score:g} / {max_score:g}（随机种子 {seed}）。",
        en="Score {score:g} / {max_score:g} (seed {seed}).",
    ),
    "ungradable": Text(zh="无法评分：{reason}", en="Could not be graded: {reason}"),
    "printed": Text(zh="你的代码在 {exercise} 中打印的内容：", en="What your code printed in {exercise}:"),
    # class report labels
    "cr_title": Text(zh="全班评分分析", en="Class grading report"),
    "cr_submissions": Text(zh="提交数", en="Submissions"),
    "cr_graded": Text(zh="已评分", en="graded"),
    "cr_refused": Text(zh="被拒绝", en="refused"),
    "cr_error": Text(zh="评分出错", en="grader errors"),
    "cr_seed": Text(zh="本批次随机种子", en="Batch seed"),
    "cr_distribution": Text(
        zh="总分分布（仅已评分的提交）", en="Score distribution (graded submissions only)"
    ),
    "cr_mean": Text(zh="平均分", en="mean"),
    "cr_median": Text(zh="中位数", en="median"),
    "cr_stdev": Text(zh="标准差", en="std. dev."),
    "cr_exercises": Text(zh="各练习平均分", en="Mean score per exercise"),
    "cr_exercise": Text(zh="练习", en="Exercise"),
    "cr_full_marks": Text(zh="满分人数", en="full marks"),
    "cr_checks": Text(
        zh="各检查项通过率与最常见的诊断", en="Pass rate and most frequent diagnoses per check"
    ),
    "cr_check": Text(zh="检查项", en="Check"),
    "cr_pass_rate": Text(zh="通过率", en="pass rate"),
    "cr_diagnoses": Text(zh="最常见的诊断", en="most frequent diagnoses"),
    "cr_misconceptions": Text(
        zh="全班共有的错误（按学生人数）", en="Misconceptions shared by the class (by students)"
    ),
    "cr_students": Text(zh="学生数", en="students"),
    "cr_diagnosis": Text(zh="诊断出的错误", en="diagnosed mistake"),
    "cr_more": Text(zh="另有 {count} 种错误，见 analytics.json。", en="{count} more in analytics.json."),
    "cr_none": Text(zh="无", en="none"),
    "cr_problems": Text(
        zh="未能完整评分的提交（被拒绝、出错，或有练习无法加载、崩溃、超时）",
        en="Submissions not fully graded "
        "(refused, failed, or an exercise that did not load, crashed or timed out)",
    ),
    "cr_student": Text(zh="学生", en="Student"),
    "cr_reason": Text(zh="原因", en="Reason"),
    "cr_hidden": Text(zh="隐藏", en="hidden"),
    # batch log
    "log_done": Text(
        zh="完成：本次评了 {graded} 份，此前已完成 {kept} 份，共 {total} 份；"
        "用时 {seconds:.1f} 秒（{rate:.1f} 份/秒）。",
        en="Done: graded {graded} now, {kept} kept from before, {total} in all; "
        "{seconds:.1f} s ({rate:.1f} per second).",
    ),
    "log_interrupted": Text(
        zh="已中断：{done} / {total} 份已完成并保存；再次运行同一命令即可继续。",
        en="Interrupted: {done} of {total} finished and saved; run the same command again to resume.",
    ),
    "log_outputs": Text(
        zh="成绩册：{gradebook}；班级报告：{report}", en="Gradebook: {gradebook}; class report: {report}"
    ),
}


def msg(key: str, **params) -> Text:
    """The sentence `key` with `params` filled in, in both languages."""
    return MESSAGES[key].format(**params)


def labels(lang: Lang) -> dict[str, str]:
    """Every sentence in `lang`, unformatted (for templates)."""
    return {key: text(lang) for key, text in MESSAGES.items()}
