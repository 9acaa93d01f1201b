def copy_kernel(x, y, tiling):
    length = tiling.length
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x, length)
    yGm.SetGlobalBuffer(y, length)
    pipe = TPipe()
    inQueue = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(inQueue, 1, length * 2)
    # CopyIn: GM -> UB on MTE2
    xLocal = inQueue.AllocTensor(half)
    DataCopy(xLocal, xGm, length)
    inQueue.EnQue(xLocal)
    # CopyOut: UB -> GM on MTE3
    xLocal = inQueue.DeQue(half)
    DataCopy(yGm, xLocal, length)
    inQueue.FreeTensor(xLocal)
