import math
import torch
import torch.nn.functional as F

class SelfAttention(torch.nn.Module):
    def __init__(self, d_model, d_k):
        super().__init__()
        self.W_q = torch.nn.Linear(d_model, d_k)
        self.W_k = torch.nn.Linear(d_model, d_k)
        self.W_v = torch.nn.Linear(d_model, d_k)

    def forward(self, x):
        # 投影到 Q /K/ V 空间 [batch, seq_len, d_k]
        q = self.W_q(x)
        k = self.W_k(x)
        v = self.W_v(x)

        # 计算注意力分数
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d_k)
        attn_weights = F.softmax(scores, dim=-1)

        # 上下文聚合
        context = torch.matmul(attn_weights, v)
        return context
