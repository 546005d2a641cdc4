x = x.contiguous()
y = torch.empty_like(x)
n = x.numel()
if n == 0:
    return y
BLOCK = {{BLOCK}}
