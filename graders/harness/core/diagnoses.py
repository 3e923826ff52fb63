"""Mistakes every exercise can make, named by the harness itself: outputs in the wrong layout.

An exercise's manifest declares the mistakes of its own subject; these are about the shape of what
comes back, whatever the subject, and `expect` names them without a grader asking. A manifest may
declare a diagnosis of the same id to word it for its exercise; the manifest's wins.
"""

from __future__ import annotations

from .i18n import Text
from .models import DiagnosisSpec

COMMON_DIAGNOSES: dict[str, DiagnosisSpec] = {
    "axes_swapped": DiagnosisSpec(
        message=Text(
            zh="`{name}` 的各个维度都对，只是顺序不对：形状是 {got}，应为 {expected}（某处的 transpose/permute 放错了）。",
            en="`{name}` has the right dimensions in the wrong order: shape {got}, expected {expected}"
            " (a transpose or permute in the wrong place).",
        )
    ),
    "extra_axis": DiagnosisSpec(
        message=Text(
            zh="`{name}` 多了一个大小为 1 的维度（{got}，应为 {expected}）：去掉它（squeeze），或者不要加上它。",
            en="`{name}` has an extra axis of size 1 ({got}, expected {expected}): squeeze it, or do not add it.",
        )
    ),
    "missing_axis": DiagnosisSpec(
        message=Text(
            zh="`{name}` 少了一个大小为 1 的维度（{got}，应为 {expected}）：多了一次 squeeze()，或者丢掉了批次维。",
            en="`{name}` lost an axis of size 1 ({got}, expected {expected}): a squeeze() too many, or a batch"
            " axis dropped.",
        )
    ),
    "name_not_defined": DiagnosisSpec(
        message=Text(
            zh="你的代码用到了一个没有定义、也没有导入的名字（NameError）：补上缺的 import（例如 `import math`），或者改正拼写。",
            en="Your code uses a name it never defined or imported (NameError): add the missing import (`import math`, for example) or fix the spelling.",
        )
    ),
    "max_returns_pair": DiagnosisSpec(
        message=Text(
            zh="带 dim 的 torch.max 返回 (values, indices) 两个东西；要的是 .values（或用 amax）。",
            en="torch.max with a dim returns (values, indices); take .values (or use amax).",
        )
    ),
    "list_of_tensors": DiagnosisSpec(
        message=Text(
            zh="`{name}` 是一个由张量组成的 Python 列表（或元组）：若它们是同一结果的各部分，用 torch.stack 或 torch.cat 合成一个张量；若只该返回其中一个，就只返回那一个。",
            en="`{name}` is a Python list (or tuple) of tensors: if they are parts of one result, make them one tensor (torch.stack or torch.cat); if only one of them should be returned, return that one alone.",
        )
    ),
    "integer_tensor": DiagnosisSpec(
        message=Text(
            zh="这一行对整数张量做了只适用于浮点数的运算（除法、开方、与浮点张量相乘……）：用浮点张量（dtype=torch.float32，或 .float()）。",
            en="This line does floating-point work (a division, a square root, a product with a float tensor …) on an integer tensor: use float tensors (dtype=torch.float32, or .float()).",
        )
    ),
    "complex_numbers": DiagnosisSpec(
        message=Text(
            zh="这一行遇到了复数张量（ComplexFloat/ComplexDouble），而它只接受实数：多半是某个数来自 cmath（cmath.sqrt 即使对正数也返回复数；import cmath as math 也一样），或者在 Python 里对负数取了分数次幂。用 math 模块（math.sqrt）或实数运算。",
            en="That line met a complex tensor (ComplexFloat or ComplexDouble) where only real ones are accepted: most likely a number came from cmath (cmath.sqrt returns a complex number even for a positive one, and so does `import cmath as math`), or a negative number was raised to a fractional power in Python. Use the math module (math.sqrt) or real arithmetic.",
        )
    ),
    "number_not_tensor": DiagnosisSpec(
        message=Text(
            zh="一个 torch 函数拿到的是 Python 数字而不是张量：普通数字用 math.sqrt 之类（或先 torch.tensor(...)）。",
            en="A torch function was given a Python number instead of a tensor: for plain numbers use math.sqrt and friends (or torch.tensor(...) first).",
        )
    ),
    "forward_missing": DiagnosisSpec(
        message=Text(
            zh="这个 nn.Module 没有 forward 方法（可能拼错了名字）：调用层时运行的是 forward(self, x)。",
            en="This nn.Module has no forward method (its name misspelt?): calling the layer runs forward(self, x).",
        )
    ),
    "call_arguments_wrong": DiagnosisSpec(
        message=Text(
            zh="这一行的一次调用传入的参数与被调用的函数不符（多了、少了，或关键字参数名不对，见上面的报错）：按那个函数的定义来调用（你自己的、兄弟练习的或 torch 的；对一个层，看它的 forward()）。",
            en="A call on that line passes arguments the called function does not take, or leaves out one it needs (see the error above): call it as its definition says (yours, a sibling exercise's or torch's; for a layer, its forward()).",
        )
    ),
    "signature_mismatch": DiagnosisSpec(
        message=Text(
            zh="评分程序按题目给出的参数调用它，而你的定义要求的参数不同：保持模板中的函数签名。",
            en="The grader calls it with the arguments the statement gives, and your definition asks for others: keep the template's signature.",
        )
    ),
    "caret_is_xor": DiagnosisSpec(
        message=Text(
            zh="在 Python 中 ^ 是按位异或，不是乘方：乘方写 **（或 torch.pow）。",
            en="In Python ^ is bitwise XOR, not a power: write ** (or torch.pow).",
        )
    ),
    "unstable_softmax": DiagnosisSpec(
        message=Text(
            zh="分数一大，你的 softmax 就得出 inf/NaN：exp 溢出了。先减去每一行的最大值再做 exp（或直接用 torch.softmax）。",
            en="On large scores your softmax gives inf/NaN: exp overflows. Subtract each row's maximum before the exp (or use torch.softmax).",
        )
    ),
    "math_on_tensor": DiagnosisSpec(
        message=Text(
            zh="math 模块的函数（math.exp、math.sqrt、math.log……）只接受一个数，这里却收到了一个有许多元素的张量。对张量请用 torch 中同名的函数（torch.exp、torch.sqrt……），它们逐元素计算；math 只用于像 d_k 这样的单个数。",
            en="A function of the math module (math.exp, math.sqrt, math.log, …) takes one number, and it was given a tensor of many elements. On a tensor use torch's function of the same name (torch.exp, torch.sqrt, …), which works element by element; math is for single numbers such as d_k.",
        )
    ),
    "tensor_from_tensors": DiagnosisSpec(
        message=Text(
            zh="torch.tensor(...) 不能把一串张量合成一个张量：用 torch.stack（新的一维）或 torch.cat（接在已有的一维上）。",
            en="torch.tensor(...) cannot build one tensor out of a list of tensors: use torch.stack (a new axis) or torch.cat (along an existing one).",
        )
    ),
    "negative_step": DiagnosisSpec(
        message=Text(
            zh="torch 不支持负步长（[::-1] 或来自 numpy 的负步长数组）：用 .flip(dim)，或用下标列表。",
            en="torch does not take negative steps ([::-1], or a numpy array with one): use .flip(dim), or index with a list.",
        )
    ),
    "index_out_of_range": DiagnosisSpec(
        message=Text(
            zh="下标超出了它所索引的那一维：要么是从 1 开始数了（Python 从 0 开始，长度为 n 的一维最后一个下标是 n − 1），要么是索引错了维度。",
            en="An index is out of range for the axis it indexes: either it counts from 1 (Python counts from 0, so the last index along an axis of length n is n − 1), or it indexes the wrong axis.",
        )
    ),
    "float_size": DiagnosisSpec(
        message=Text(
            zh="一个尺寸或下标是浮点数（例如 E / H）：用整数除法 E // H。",
            en="A size or an index is a float (E / H, say): use the integer division E // H.",
        )
    ),
    "super_init": DiagnosisSpec(
        message=Text(
            zh="nn.Module 的 __init__ 没有正确调用：在 __init__ 的第一行写 super().__init__()。",
            en="nn.Module's __init__ is not called properly: write super().__init__() as the first line of __init__.",
        )
    ),
    "keepdim_missing": DiagnosisSpec(
        message=Text(
            zh="沿某一维做的 sum/max/mean 会去掉这一维，于是它和被除（或被减）的张量对不齐了：加上 keepdim=True。",
            en="A sum, max or mean along a dimension drops that dimension, so it no longer lines up with the tensor it divides or is subtracted from: pass keepdim=True.",
        )
    ),
    "given_value_ignored": DiagnosisSpec(
        message=Text(
            zh="前向计算覆盖或忽略了传给它的值：不要在 forward 里重新初始化参数或改写输入，只读取它们。",
            en="The forward pass overwrites or ignores a value it is given: do not re-initialise parameters or rewrite inputs in forward; only read them.",
        )
    ),
    "bmm_needs_3d": DiagnosisSpec(
        message=Text(
            zh="torch.bmm 只接受三维张量 (B, n, m)：没有批次维的二维输入或多出一维的四维输入都会报错。改用 @（torch.matmul），并用 transpose(-2, -1)，它们适用于任意多个前导维度。",
            en="torch.bmm takes 3-D tensors (B, n, m) only: 2-D input without a batch axis, or 4-D input with one more, raises. Use @ (torch.matmul) with transpose(-2, -1): they take any number of leading dimensions.",
        )
    ),
    "attribute_never_set": DiagnosisSpec(
        message=Text(
            zh="你的代码读取了对象上一个从未设置过的属性（self.某个名字）：对照 __init__ 里保存的名字和 forward 里读取的名字（拼写、大小写、下划线）。",
            en="Your code reads an attribute that was never set on the object (self.<name>): compare the names __init__ saves with the names forward reads (spelling, case, underscores).",
        )
    ),
    "low_precision": DiagnosisSpec(
        message=Text(
            zh="`{name}` 的每个值都恰好是 {dtype} 能表示的数，并且只对到大约三位有效数字：你在计算中用了半精度（.half()、float16 或 bfloat16）。请保持输入的 dtype 计算。",
            en="Every value of `{name}` is exactly a {dtype} number, and right only to about three significant digits: your computation went through half precision (.half(), float16 or bfloat16). Compute in the inputs' dtype.",
        )
    ),
    "axis_counted_from_front": DiagnosisSpec(
        message=Text(
            zh="这一行按从前往后的编号写了一个维度（例如 dim=2）：输入的前导（批次）维数不同时，它就指向另一个维度，或者根本不存在。从后往前数：最后一维是 dim=-1，倒数第二维是 -2。",
            en="That line names an axis by its number from the front (dim=2, say): when the input has fewer or more leading (batch) axes, that is another axis, or none at all. Count from the end: the last axis is dim=-1, the one before it -2.",
        )
    ),
    "shapes_do_not_fit": DiagnosisSpec(
        message=Text(
            zh="这一行里两个张量的形状对不上（见上面的报错）：在这一行打印它们的 .shape，对照题目中的形状约定。",
            en="Two tensors on that line have shapes that do not fit together (see the error above): print their .shape there and compare with the statement's shape conventions.",
        )
    ),
    "axes_merged": DiagnosisSpec(
        message=Text(
            zh="`{name}` 的元素个数对，但有两维被合成了一维（{got}，应为 {expected}）：用 view/reshape 把它们分开。",
            en="`{name}` has the right number of entries but two axes merged into one ({got}, expected {expected}): view or reshape it back.",
        )
    ),
    "returns_one_output": DiagnosisSpec(
        message=Text(
            zh="只返回了 {first}；要返回两个值：({first}, {second})。",
            en="Only {first} comes back; return both: ({first}, {second}).",
        )
    ),
    "batch_elements_mixed": DiagnosisSpec(
        message=Text(
            zh="批次中的样本互相影响了：有一步运算（注意力、softmax 或归一化）跨越了批次维。每个样本要单独计算。",
            en="Batch elements affect each other: a step (the attention, a softmax, a normalisation) runs across the batch axis. Each element must be computed on its own.",
        )
    ),
    "outputs_swapped": DiagnosisSpec(
        message=Text(
            zh="两个输出的顺序反了：应返回 ({first}, {second})。",
            en="The two outputs come back in the wrong order: return ({first}, {second}).",
        )
    ),
    "tensor_truth_value": DiagnosisSpec(
        message=Text(
            zh="这一行向一个有多个元素的张量要一个 True/False（`if t:`、`if not t:`、`and`/`or`），Python 无法回答。要判断参数是否给出，写 `if t is None`；要判断其中的值，用 .any() 或 .all()。",
            en="That line asks a tensor with several values for one True/False (`if t:`, `if not t:`, `and`/`or`), which Python cannot answer. To test whether an argument was given, write `if t is None`; to test its values, use .any() or .all().",
        )
    ),
    "float64_mixed_with_float32": DiagnosisSpec(
        message=Text(
            zh="这一行把一个 float64（Double）张量和一个 float32（Float）张量放在一起运算，torch 不会替你统一类型：某处把 dtype 写死了，比如 .double()、.float()、层或张量上的 dtype=torch.float64，或者由 numpy 数组（默认 float64）转来的张量，而另一个操作数是输入的 dtype。去掉这次转换，新建张量时用 dtype=x.dtype（输入的 dtype）。",
            en="That line combines a float64 tensor (Double) with a float32 one (Float), and torch will not convert one for you: somewhere a dtype was fixed by hand (.double(), .float(), dtype=torch.float64 on a layer or a tensor, a tensor made from a numpy array, which is float64) while the other operand has the input's dtype. Drop the cast and make new tensors with dtype=x.dtype, the input's.",
        )
    ),
    "arange_bounds_reversed": DiagnosisSpec(
        message=Text(
            zh="torch.arange(start, end, step) 从 start 走到 end（不含 end）：这里的 start 与 end 的顺序和步长的方向对不上。只给两个数时，第一个是起点，不是终点；要带步长就写全三个数，例如 torch.arange(0, d_model, 2)。",
            en="torch.arange(start, end, step) counts from start up to end (end left out), and here the step cannot get from start to end. With two numbers the first is the start, not the end; with a step, write all three: torch.arange(0, d_model, 2).",
        )
    ),
    "write_overlaps_input": DiagnosisSpec(
        message=Text(
            zh="这一行写入的张量与被写入的值共用同一块内存（例如 result = x，或 x 的视图 x.T、x[...]，再写 result[idx] = x）：写入会覆盖还没读到的值，torch 拒绝执行。写进一个新张量（torch.empty_like(x) 或 x.clone()），也不要改写调用者传进来的输入。",
            en="That line writes into a tensor that shares its memory with the values being written (result = x, or a view of x such as x.T or x[...], then result[idx] = x): the writes would overwrite values not read yet, so torch refuses. Write into a new tensor (torch.empty_like(x) or x.clone()), and never into the caller's input.",
        )
    ),
    "iterator_used_twice": DiagnosisSpec(
        message=Text(
            zh="zip(..., strict=True) 遇到了长度不同的两个序列：其中一个比应有的短，常常是空的，因为它来自一个已经被遍历过的生成器或迭代器（(… for …) 表达式、map()、filter()、zip()）。这类对象只能遍历一次：sum(g) 之后再遍历 g 就什么也没有了。需要用两次的值请存进列表（[… for …]）；否则就是两个序列本来就不一样长，打印它们的长度看看。",
            en="zip(..., strict=True) met sequences of different lengths: one is shorter than it should be, often empty, because it came from a generator or iterator already gone through (a (… for …) expression, map(), filter(), zip()). Those can be traversed once only: after sum(g), a second pass over g finds nothing. Keep values you need twice in a list ([… for …]); otherwise the two really differ in length: print their lengths.",
        )
    ),
}


# Exceptions that mean the same mistake in any exercise: matched like a grader's KNOWN_ERRORS, after them.
COMMON_ERRORS: dict[str, str] = {
    "name_not_defined": r"^NameError: name '\w+' is not defined",
    "max_returns_pair": r"torch\.return_types\.max",
    "super_init": r"super\(\) argument 1|of 'super' object needs an argument|before Module\.__init__\(\) call",
    "integer_tensor": r"not implemented for '(Long|Int|Short|Byte)'|desired output type (Long|Int)|"
    r"expected scalar type (Long|Int)|(Float|Double) did not match (Long|Int)|(Long|Int) did not match (Float|Double)|"
    r"same dtype, but got: (float|double) != long|same dtype, but got: long int != (float|double)",
    "complex_numbers": r"not implemented for 'Complex(Float|Double|Half)'|c10::complex<|"
    r"can't convert complex to float|complex (numbers|values) (are|is) not supported",
    "number_not_tensor": r"must be Tensor, not (int|float)",
    "bmm_needs_3d": r"batch[12] must be a 3D tensor",
    "attribute_never_set": r"^AttributeError: '(?!Tensor'|tuple'|list'|int'|float'|NoneType'|dict'|str'|module')\w+' object has no attribute",
    "forward_missing": r"missing the required \"forward\" function",
    # raised on a line of the student's own code: their call is wrong; on none, the grader's call is
    "call_arguments_wrong": r"^TypeError: [^\n]*(missing \d+ required positional argument|"
    r"takes \d+ positional arguments? but \d+ (was|were) given|got an unexpected keyword argument)[^\n]*\n[^\n]*\S",
    "signature_mismatch": r"^TypeError: .*(missing \d+ required positional argument|takes \d+ positional arguments? but \d+ (was|were) given|got an unexpected keyword argument)",
    "caret_is_xor": r"unsupported operand type\(s\) for \^",
    # math.exp / math.sqrt (or a bare exp from `from math import exp`) on the line that raised: the
    # same message as tensor_from_tensors, told apart by the student's line the message quotes
    "math_on_tensor": r"(?s)only one element tensors can be converted to Python scalars.*\n[^\n]*"
    r"(\bmath\.\w+\(|(?<![\w.])(exp|sqrt|log|pow|sin|cos|tan|tanh|floor|ceil|fabs)\()",
    "tensor_from_tensors": r"only one element tensors can be converted to Python scalars",
    "negative_step": r"negative stride|step must be greater than zero",
    "index_out_of_range": r"index -?\d+ is out of bounds|index out of range",
    "float_size": r"found element of type float|'float' object cannot be interpreted as an integer|"
    r"argument 'size' .*float|received an invalid combination of arguments.*float",
    "keepdim_missing": r"(?s)(must match the size of tensor b|size of tensor a).*\n.*"
    r"\.(sum|max|amax|mean|logsumexp)\((?![^)\n]*keepdim)",
    "axis_counted_from_front": r"(?s)Dimension out of range.*\n[^\n]*(\bdim\s*=\s*[1-9]|"
    r"\.(softmax|transpose|sum|amax|max|mean|size|flatten|unsqueeze|squeeze)\(\s*[1-9]|"
    r"\b(softmax|transpose|sum|amax|mean|unsqueeze|squeeze)\([^)\n]*,\s*[1-9]\s*[,)])",
    "shapes_do_not_fit": r"must match the size of tensor b|mat1 and mat2 shapes cannot be multiplied|"
    r"Expected size for first two dimensions|shape '\[.*\]' is invalid for input of size|"
    r"number of dims don't match in permute|Dimension out of range|expanded size of the tensor|"
    r"stack expects each tensor to be equal size|cannot be broadcast|shape mismatch",
    "tensor_truth_value": r"Boolean value of Tensor with more than one value is ambiguous|"
    r"truth value of an array with more than one element is ambiguous",
    "float64_mixed_with_float32": r"expected scalar type (Double|Float) but found (Float|Double)|"
    r"same dtype, but got (Float and Double|Double and Float)|same dtype, but got: (double != float|float != double)|"
    r"Found dtype (Double|Float) but expected (Float|Double)|(Float|Double) did not match (Double|Float)",
    "arange_bounds_reversed": r"upper bound and lower bound inconsistent with step sign",
    "write_overlaps_input": r"some elements of the input tensor and the written-to tensor refer to a single memory location",
    "iterator_used_twice": r"zip\(\) argument \d+ is (longer|shorter) than argument",
}


def lookup(diagnoses: dict[str, DiagnosisSpec], diagnosis: str) -> DiagnosisSpec | None:
    """The exercise's own diagnosis `diagnosis`, else the harness's, else None."""
    return diagnoses.get(diagnosis) or COMMON_DIAGNOSES.get(diagnosis)
