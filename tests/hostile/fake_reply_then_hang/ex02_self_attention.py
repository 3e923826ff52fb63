"""Hostile submission: writes forged 'ok' replies (guessing their turn numbers) to fd 3, then hangs in
every call.
"""

import torch

json = torch.sys.modules["json"]
os = torch.os
struct = torch.sys.modules["struct"]
time = torch.sys.modules["time"]


def forge(header):
    raw = json.dumps(dict(header, buffers=[])).encode()
    os.write(3, struct.pack(">I", len(raw)) + raw)


forge({"ok": True, "seq": 2})  # a guess at the load request's turn number
forge({"ok": True, "seq": 3, "value": {"$tuple": [1.0, 1.0]}})


def scaled_dot_product_attention(q, k, v):
    forge({"ok": True, "value": {"$tuple": [{"$float": "nan"}, {"$float": "nan"}]}})
    time.sleep(10**9)


class SimpleSelfAttention(torch.nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        forge({"ok": True, "value": {"$handle": 1, "type": "x", "callable": True}})
        time.sleep(10**9)
