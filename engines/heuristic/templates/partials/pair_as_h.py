def _pair(h, w):
    return (h, h if w < 0 else w)
