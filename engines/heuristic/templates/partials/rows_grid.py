y = torch.empty_like(x)
if x.numel() == 0:
    return y
BLOCK_R = min({{BLOCK_R}}, triton.next_power_of_2(R))
BLOCK_I = min({{BLOCK_I}}, triton.next_power_of_2(INNER))
num_inner_blocks = triton.cdiv(INNER, BLOCK_I)
grid = (OUTER * num_inner_blocks,)
