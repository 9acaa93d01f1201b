def copy_kernel(x, y, tiling):
    length = tiling.length
    xGm = GlobalTensor(half)
    yGm = GlobalTensor(half)
    xGm.SetGlobalBuffer(x, length)
    yGm.SetGlobalBuffer(y, length)
    pipe = TPipe()
    inQueue = TQue(TPosition.VECIN, 1)
    pipe.InitBuffer(inQueue, 1, length * 2)
    # counts the copy in bytes / sizeof(half) twice: only half of the vector moves
    count = length * 2 // 4
    xLocal = inQueue.AllocTensor(half)
    DataCopy(xLocal, xGm, count)
    inQueue.EnQue(xLocal)
    xLocal = inQueue.DeQue(half)
    DataCopy(yGm, xLocal, count)
    inQueue.FreeTensor(xLocal)
