BLOCK = 16  # one 32-byte block of halves per copy


def copy_kernel(x, y, tiling):
    length = tiling.length
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x, length)
    yGm.SetGlobalBuffer(y, length)
    pipe = TPipe()
    inQueue = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(inQueue, 1, BLOCK * 2)
    for i in range(length // BLOCK):
        xLocal = inQueue.AllocTensor(half)
        DataCopy(xLocal, xGm[i * BLOCK], BLOCK)
        inQueue.EnQue(xLocal)
        xLocal = inQueue.DeQue(half)
        DataCopy(yGm[i * BLOCK], xLocal, BLOCK)
        inQueue.FreeTensor(xLocal)
