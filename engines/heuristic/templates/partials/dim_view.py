x = x.contiguous()
dim = self.dim % x.dim()
R = x.shape[dim]
INNER = 1
for s in x.shape[dim + 1:]:
    INNER *= s
OUTER = x.numel() // max(1, R * INNER)
